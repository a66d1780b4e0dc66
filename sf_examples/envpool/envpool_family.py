"""The two EnvPool families as their scripts see them, and the train/enjoy logic they share: names, parsing, the early
dependency check."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError, unknown_env_message
from sample_factory.train import run_rl
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.entry_points import FamilyFlags, enjoy_status, register_family_envs
from sf_examples.envpool.atari.envpool_atari_params import (
    ENVPOOL_ATARI_ENVS,
    envpool_atari_override_defaults,
    make_envpool_atari_env,
)
from sf_examples.envpool.envpool_utils import add_envpool_args, canonical_env_name, require_envpool, rewrite_env_arg
from sf_examples.envpool.mujoco.envpool_mujoco_params import (
    ENVPOOL_MUJOCO_ENVS,
    envpool_mujoco_override_defaults,
    make_envpool_mujoco_env,
)


@dataclass(frozen=True)
class EnvPoolFamilyScripts:
    """One EnvPool family as its scripts see it: its env names, defaults hook and env factory.

    The family's train and enjoy modules (``sf_examples/envpool/<kind>/train_envpool_<kind>.py`` and
    ``enjoy_envpool_<kind>.py``) are thin: they name the methods of one of these (``ENVPOOL_ATARI``,
    ``ENVPOOL_MUJOCO`` below)."""

    kind: str  # "atari": env names envpool_atari_*, scripts in sf_examples/envpool/atari
    env_names: dict[str, str]  # env name -> EnvPool task id
    default_task: str  # without --env: envpool_<kind>_<default_task>
    override_defaults: Callable[[str, argparse.ArgumentParser], None]
    make_env: Callable[..., object]  # the env factory registered under every name of ``env_names``

    @property
    def prefix(self) -> str:
        return f"envpool_{self.kind}_"

    @property
    def default_env(self) -> str:
        return self.prefix + self.default_task

    def flags(self) -> FamilyFlags:
        package = f"sf_examples.envpool.{self.kind}"
        return FamilyFlags(
            add_envpool_args,
            self._override_defaults,
            train_script=f"{package}.train_envpool_{self.kind}",
            enjoy_script=f"{package}.enjoy_envpool_{self.kind}",
            default_env=self.default_env,
        )

    def _override_defaults(self, env_name: str, parser: argparse.ArgumentParser) -> None:
        parser.set_defaults(env=self.default_env)
        self.override_defaults(env_name, parser)

    def canonical(self, env_name: str | None) -> str | None:
        return canonical_env_name(env_name, self.prefix, self.env_names)

    def parse_cfg(self, argv: list[str] | None = None, evaluation: bool = False) -> Config:
        """Standard flags, the EnvPool flags and this family's defaults, then the final parse.

        Sample Factory 2's names (``--env=atari_breakout``) are accepted and saved as this family's.
        """
        argv = rewrite_env_arg(sys.argv[1:] if argv is None else argv, self.canonical)
        return self.flags().parse(argv, evaluation)

    def prepare(self, evaluation: bool, argv: list[str] | None = None) -> Config:
        """Parsed config with envs registered; raises before any process starts when envpool or the env is wrong."""
        cfg = self.parse_cfg(argv, evaluation)  # --help exits here and works without envpool
        if cfg.env not in self.env_names:
            raise UnknownEnvError(unknown_env_message(str(cfg.env), sorted(self.env_names)))
        self.register_envs(cfg.env)
        return cfg

    def register_envs(self, env_name: str | None = None) -> None:
        """Register every name of the family (``env_name``, passed by generic tools, makes no difference).

        A missing envpool fails here, in the main process, in one line, rather than in a worker process.
        """
        del env_name
        require_envpool()
        register_family_envs(self.env_names, self.make_env)

    def run(self, run_config: Callable[[Config], StatusCode] = run_rl, evaluation: bool = False) -> StatusCode:
        """A script's ``main``: prepare the config, then ``run_config`` it; known user errors become one line."""
        try:
            cfg = self.prepare(evaluation=evaluation)
        except (MissingDependencyError, ValueError) as exc:
            return self.fail(exc)
        return run_config(cfg)

    def enjoy(self) -> StatusCode:
        """An enjoy script's ``main``: the same checks, then watch the agent."""
        return self.run(enjoy_status, evaluation=True)

    @staticmethod
    def fail(exc: Exception) -> StatusCode:
        """One error line naming the cause and the fix, no traceback."""
        log.error("%s", exc)
        return ExperimentStatus.FAILURE


ENVPOOL_ATARI = EnvPoolFamilyScripts(
    "atari", ENVPOOL_ATARI_ENVS, "breakout", envpool_atari_override_defaults, make_envpool_atari_env
)
ENVPOOL_MUJOCO = EnvPoolFamilyScripts(
    "mujoco", ENVPOOL_MUJOCO_ENVS, "halfcheetah", envpool_mujoco_override_defaults, make_envpool_mujoco_env
)
