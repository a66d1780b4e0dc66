"""Create an env by its registered name; the single entry point rollout workers and tools use."""

from __future__ import annotations

from typing import Any

from sample_factory.envs.env_utils import get_make_env_func
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config


def make_env_config(worker_index: int, vector_index: int, env_id: int, **extra: Any) -> AttrDict:
    """Identify one env instance so its make function can seed it or pick a port/level deterministically.

    ``env_id`` must be unique across all envs of a run; ``extra`` keys are passed through unchanged.
    """
    return AttrDict(worker_index=worker_index, vector_index=vector_index, env_id=env_id, **extra)


def create_env(
    full_env_name: str,
    cfg: Config | None = None,
    env_config: AttrDict | None = None,
    render_mode: str | None = None,
) -> Any:
    """Look ``full_env_name`` up in the env registry and call its make function.

    ``env_config`` is None when the env is created outside a rollout worker (e.g. to read its spaces);
    it is passed through as is so make functions can tell the two cases apart.

    The make function is called positionally, ``make_env_func(full_env_name, cfg, env_config, render_mode)``:
    user factories name these parameters as they like (``_cfg``, ``_env_config`` are common in Sample Factory 2
    scripts), so keyword arguments would break them.
    """
    make_env_func = get_make_env_func(full_env_name)
    return make_env_func(full_env_name, cfg, env_config, render_mode)
