"""Sample Factory 2's names for the EnvPool Atari envs: specs by name and the env factory.

Both spellings of a name work: Sample Factory 2's (``atari_breakout``) and this family's (``envpool_atari_breakout``).
"""

from __future__ import annotations

from sample_factory.envs.env_utils import UnknownEnvError, unknown_env_message
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.atari.atari_utils import AtariSpec
from sf_examples.envpool.atari.envpool_atari_params import ENVPOOL_ATARI_ENVS, PREFIX, make_envpool_atari_env
from sf_examples.envpool.envpool_utils import canonical_env_name
from sf_examples.envpool.envpool_wrappers import EnvPoolBatchedEnv


def _family_name(name: str) -> str:
    canonical = canonical_env_name(name, PREFIX, ENVPOOL_ATARI_ENVS)
    if canonical not in ENVPOOL_ATARI_ENVS:
        raise UnknownEnvError(unknown_env_message(name, sorted(ENVPOOL_ATARI_ENVS)))
    return canonical


def atari_env_by_name(name: str) -> AtariSpec:
    """The spec of a game: this family's env name and the EnvPool task id it plays."""
    canonical = _family_name(name)
    return AtariSpec(canonical, ENVPOOL_ATARI_ENVS[canonical])


def make_atari_env(
    env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> EnvPoolBatchedEnv:
    """One EnvPool instance of ``--env_agents`` copies of the game (see ``make_envpool_atari_env``)."""
    return make_envpool_atari_env(_family_name(env_name), cfg, env_config, render_mode)
