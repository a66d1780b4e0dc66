"""What the example families' train, enjoy and eval scripts share, so that each script's ``main`` reads as in Sample
Factory 2's examples: register the family's components, parse its flags, run.

    def main() -> StatusCode:
        register_mujoco_components()
        cfg = parse_mujoco_cfg()
        return train_family_env(cfg, MUJOCO_ENVS)

:func:`train_family` and :func:`enjoy_family` are those three steps, so a family script's ``main`` is one call.
``FamilyFlags.parse`` is the usual parse in three steps (``sf_examples/train_custom_env_custom_model.py`` spells it
out): Sample Factory's flags with ``parse_sf_args``, then the family's own flags and defaults on that parser, then
the strict ``parse_full_cfg``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_families import EnvFamily, resolve_hook
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

    @classmethod
    def of(cls, family: EnvFamily, enjoy_script: str | None = None, default_env: str | None = None) -> FamilyFlags:
        """The flags of a family declared in ``sf_examples.families``, so its hooks are named in one place only.

        ``default_env`` is required exactly when the family's hooks take the env name first.
        """
        if family.add_args is None or family.override_defaults is None:
            raise ValueError(f"Env family {family.name!r} names no add_args/override_defaults hooks to parse with")
        if family.env_name_first != (default_env is not None):
            raise ValueError(f"Env family {family.name!r}: pass default_env exactly when its hooks take the env name")
        return cls(
            resolve_hook(family.add_args),
            resolve_hook(family.override_defaults),
            train_script=family.train_script,
            enjoy_script=enjoy_script,
            default_env=default_env,
            defaults_take_evaluation=family.defaults_take_evaluation,
        )

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


def parse_with_defaults(defaults: Mapping[str, Any], argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Sample Factory's flags with an example's own defaults, for examples that add no flags: the usual three steps
    with nothing between the two parses but ``set_defaults``. The command line still wins."""
    parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
    parser.set_defaults(**defaults)
    return parse_full_cfg(parser, argv)


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


def train_family(
    register: Callable[[], None], parse: Callable[..., Config], env_names: Collection[str] | None = None
) -> StatusCode:
    """A train script's ``main``: register the components, parse the command line, train.

    With ``env_names``, a ``--env`` outside them fails with one error line instead of training.
    """
    register()
    cfg = parse()
    return run_rl(cfg) if env_names is None else train_family_env(cfg, env_names)


def enjoy_family(
    register: Callable[[], None],
    parse: Callable[..., Config],
    env_names: Collection[str],
    run: Callable[[Config], StatusCode] | None = None,
) -> StatusCode:
    """An enjoy (or eval) script's ``main``: register, parse with the watching defaults, then ``run`` the config
    (watch the agent by default) for one of ``env_names``."""
    register()
    return run_family_env(parse(evaluation=True), env_names, run or enjoy_status)


def train_family_env(cfg: Config, env_names: Collection[str]) -> StatusCode:
    return run_family_env(cfg, env_names, run_rl)


def enjoy_family_env(cfg: Config, env_names: Collection[str]) -> StatusCode:
    return run_family_env(cfg, env_names, enjoy_status)


def enjoy_status(cfg: Config) -> StatusCode:
    """Watch the agent; the exit status of ``sample_factory.enjoy.enjoy`` (imported here: training never needs it)."""
    from sample_factory.enjoy import enjoy

    status, _ = enjoy(cfg)
    return status
