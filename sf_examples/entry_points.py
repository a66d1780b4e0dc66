"""What the example families' train, enjoy and eval scripts share, so that each script's ``main`` reads as in Sample
Factory 2's examples: register the family's components, parse its flags, run.

    def main() -> StatusCode:
        register_mujoco_components()
        cfg = parse_mujoco_cfg()
        return train_family_env(cfg, MUJOCO_ENVS)

``FamilyFlags.parse`` is the usual parse in three steps (``sf_examples/train_custom_env_custom_model.py`` spells it
out): Sample Factory's flags with ``parse_sf_args``, then the family's own flags and defaults on that parser, then
the strict ``parse_full_cfg``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env, unknown_env_message
from sample_factory.train import run_rl
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log


@dataclass(frozen=True)
class FamilyFlags:
    """A family's flags as its scripts add them: its own flags, its defaults, and the scripts that train and watch it.

    With ``default_env`` set, both hooks take the env name first (``add_args(env_name, parser)``, the form of
    Sample Factory 2's ``add_extra_params_func(env, parser)``): the ``--env`` value, else ``default_env``.
    ``defaults_take_evaluation``: the defaults hook accepts ``evaluation=`` (its watching defaults differ).
    ``train_script`` and ``enjoy_script`` are saved in the config of enjoy and eval runs, where the Hub upload and
    the "train it first" hints read them.
    """

    add_args: Callable[..., None]
    override_defaults: Callable[..., None]
    train_script: str
    enjoy_script: str | None = None
    default_env: str | None = None
    defaults_take_evaluation: bool = False

    def parse(self, argv: list[str] | None = None, evaluation: bool = False) -> Config:
        """Sample Factory's flags, the family's flags and defaults, then the strict final parse."""
        parser, partial_cfg = parse_sf_args(argv=argv, evaluation=evaluation)
        self.add_to(parser, partial_cfg.env, evaluation)
        return parse_full_cfg(parser, argv)

    def add_to(self, parser: argparse.ArgumentParser, env_name: str | None, evaluation: bool) -> None:
        env_args = () if self.default_env is None else (env_name or self.default_env,)
        self.add_args(*env_args, parser)
        evaluation_kwargs = {"evaluation": evaluation} if self.defaults_take_evaluation else {}
        self.override_defaults(*env_args, parser, **evaluation_kwargs)
        if evaluation:
            scripts = {"train_script": self.train_script, "enjoy_script": self.enjoy_script}
            parser.set_defaults(**{flag: script for flag, script in scripts.items() if script})


def register_family_envs(env_names: Iterable[str], make_env: Callable[..., object]) -> None:
    """Register every name of a family with the family's env factory (one factory, told apart by the name)."""
    for env_name in env_names:
        register_env(env_name, make_env)


def known_env(cfg: Config, env_names: Collection[str]) -> bool:
    """Whether ``--env`` is one of the family's; if not, one error line naming them, before any process starts."""
    if cfg.env in env_names:
        return True
    log.error("%s", unknown_env_message(str(cfg.env), sorted(env_names)))
    return False


def run_family_env(cfg: Config, env_names: Collection[str], run: Callable[[Config], StatusCode]) -> StatusCode:
    """``run(cfg)`` for one of the family's envs; FAILURE, with the error line, for any other name."""
    return run(cfg) if known_env(cfg, env_names) else ExperimentStatus.FAILURE


def train_family_env(cfg: Config, env_names: Collection[str]) -> StatusCode:
    return run_family_env(cfg, env_names, run_rl)


def enjoy_family_env(cfg: Config, env_names: Collection[str]) -> StatusCode:
    return run_family_env(cfg, env_names, enjoy_status)


def enjoy_status(cfg: Config) -> StatusCode:
    """Watch the agent; the exit status of ``sample_factory.enjoy.enjoy`` (imported here: training never needs it)."""
    from sample_factory.enjoy import enjoy

    status, _ = enjoy(cfg)
    return status
