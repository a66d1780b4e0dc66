"""What the EnvPool families share: the dependency check, the flags, env names and the batched-sampling defaults.

Every env of these families is one EnvPool instance of ``--env_agents`` envs; the batched sampler steps it as one
natively vectorised env (``--batched_sampling=True``, ``--num_envs_per_worker=1``, one split per worker).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from sample_factory.envs.env_utils import MissingDependencyError, require_optional_module
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv

ENVPOOL_INSTALL = 'pip install "sample-factory[envpool]"'

# Sample Factory flags every EnvPool env needs; the command line still wins (then the checks below apply).
BATCHED_DEFAULTS: dict[str, Any] = {
    "batched_sampling": True,
    # one EnvPool instance per worker, stepped as one vectorised env (alone in its split)
    "num_envs_per_worker": 1,
    "worker_num_splits": 1,
}


def require_envpool() -> Any:
    """The ``envpool`` module, or MissingDependencyError whose one-line message names the package and the fix."""
    try:
        return require_optional_module("envpool", extra="envpool", what="EnvPool envs")
    except MissingDependencyError as exc:
        raise MissingDependencyError(
            f"EnvPool envs need the Python package 'envpool' ({exc.__cause__}). Install it with {ENVPOOL_INSTALL}; "
            "EnvPool publishes wheels for Linux x86_64/aarch64 and macOS, Python >= 3.11 (envpool 1.x)"
        ) from exc


def envpool_available() -> bool:
    """Whether the ``envpool`` package can be imported (Sample Factory 2's name; tests skip on False)."""
    try:
        require_envpool()
    except MissingDependencyError:
        return False
    return True


def add_envpool_args(env: str | None, parser: argparse.ArgumentParser) -> None:
    """Flags of both EnvPool families (saved in config.json, so enjoy and eval rebuild the same pool)."""
    del env
    group = parser.add_argument_group("EnvPool", "Flags of the envpool_* envs.")
    group.add_argument(
        "--env_agents",
        type=int,
        default=64,
        help="Envs in one EnvPool instance (one per rollout worker); each is one agent of the batched sampler. "
        "More envs amortise Python overhead per step; samples per rollout = num_workers x env_agents x rollout.",
    )
    group.add_argument(
        "--envpool_num_threads",
        type=int,
        default=0,
        help="C++ threads stepping one pool; 0 lets EnvPool choose (one per core). With several rollout workers "
        "on few cores, 1-2 per worker avoids oversubscription.",
    )


# Sample Factory 2's name for the same hook
add_envpool_common_args = add_envpool_args


def pool_seed(cfg: Config | None, env_config: AttrDict | None) -> int:
    """A distinct seed per pool: ``--seed`` (or 0) spread by the env's unique ``env_id``."""
    base = getattr(cfg, "seed", None) if cfg is not None else None
    env_id = int(env_config.env_id) if env_config is not None and env_config.env_id >= 0 else 0
    return (0 if base is None else int(base)) * 100_003 + env_id * 10_007


def make_batched_env(
    task_id: str,
    cfg: Config | None,
    env_config: AttrDict | None,
    render_mode: str | None,
    **task_kwargs: Any,
) -> EnvPoolBatchedEnv:
    """``envpool.make(task_id, num_envs=--env_agents, ...)`` wrapped for the batched sampler."""
    envpool = require_envpool()
    num_envs = int(getattr(cfg, "env_agents", 64)) if cfg is not None else 64
    if num_envs < 1:
        raise ValueError(f"--env_agents={num_envs} must be >= 1")
    threads = int(getattr(cfg, "envpool_num_threads", 0)) if cfg is not None else 0
    kwargs = {"num_threads": threads, "seed": pool_seed(cfg, env_config), **task_kwargs}
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    pool = envpool.make(task_id, env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, **kwargs)
    return EnvPoolBatchedEnv(pool, num_envs, render_mode=render_mode)


def canonical_env_name(env_name: str | None, prefix: str, names: dict) -> str | None:
    """Sample Factory 2's names (``atari_breakout``, ``mujoco_ant``) as this family's (``envpool_atari_breakout``).

    The prefix keeps every env name owned by exactly one family, so generic tools pick the EnvPool family from the
    name saved in config.json.
    """
    if env_name is None or env_name in names:
        return env_name
    prefixed = f"envpool_{env_name}"
    return prefixed if prefixed.startswith(prefix) and prefixed in names else env_name


def rewrite_env_arg(argv: list[str], rename: Callable[[str | None], str | None]) -> list[str]:
    """``argv`` with the value of ``--env`` (``--env=X`` or ``--env X``) passed through ``rename``."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg.startswith("--env="):
            out[i] = "--env=" + str(rename(arg[len("--env=") :]))
        elif arg == "--env" and i + 1 < len(out):
            out[i + 1] = str(rename(out[i + 1]))
    return out
