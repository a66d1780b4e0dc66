"""The example env families in one table, for tools that are not a family's own train script.

A family's train script (``sf_examples.vizdoom.train_vizdoom``, ``sf_examples.train_gym_env``, ...) registers its
envs and adds its flags and defaults itself. Generic tools (``python -m sample_factory.eval``, the random-policy
throughput tool) get only an ``--env`` name: :func:`family_of` finds the family that owns it,
:func:`add_family_args` gives a parser the family's flags and defaults (e.g. ``--env_frameskip=4`` for ``doom_*``)
and :func:`register_family_env` registers the env and the family's models.

Family modules are named as ``"module:function"`` strings and imported only when used, so importing this table
is cheap and VizDoom is imported only for ``doom_*`` envs.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any

from sample_factory.envs.env_utils import get_make_env_func


@dataclass(frozen=True)
class EnvFamily:
    """One example env family: the env names it owns and its hooks as ``"module:function"`` references.

    ``register()`` registers the family's envs and models, ``add_args(parser)`` adds the family's own flags and
    ``override_defaults(parser)`` sets its defaults on Sample Factory's flags. The Gymnasium hooks take the env name
    as their first argument (``env_name_first``); the VizDoom defaults differ when watching/evaluating
    (``defaults_take_evaluation``: the function accepts ``evaluation=``).
    """

    name: str
    train_script: str  # named in the "train it first" hint of evaluation tools
    register: str
    add_args: str | None = None
    override_defaults: str | None = None
    env_names: frozenset[str] = frozenset()
    env_prefix: str | None = None
    env_name_first: bool = False
    defaults_take_evaluation: bool = False

    def owns(self, env_name: str) -> bool:
        return env_name in self.env_names or bool(self.env_prefix and env_name.startswith(self.env_prefix))

    def call(self, hook: str, env_name: str, *args: Any, **kwargs: Any) -> Any:
        """Import and call one hook with this family's calling convention."""
        module_name, _, func_name = hook.partition(":")
        func = getattr(importlib.import_module(module_name), func_name)
        return func(env_name, *args, **kwargs) if self.env_name_first else func(*args, **kwargs)


_DOOM_PARAMS = "sf_examples.vizdoom.doom.doom_params"
_CUSTOM_ENV = "sf_examples.train_custom_env_custom_model"
_CUSTOM_MULTI_ENV = "sf_examples.train_custom_multi_env"
_GYM_UTILS = "sf_examples.gym.gym_utils"

VIZDOOM = EnvFamily(
    name="vizdoom",
    train_script="sf_examples.vizdoom.train_vizdoom",
    register="sf_examples.vizdoom.train_vizdoom:register_vizdoom_components",
    add_args=f"{_DOOM_PARAMS}:add_doom_env_args",
    override_defaults=f"{_DOOM_PARAMS}:doom_override_defaults",
    env_prefix="doom_",  # every name of DOOM_SPECS; a misspelt doom_* name fails in register_family_env
    defaults_take_evaluation=True,
)
CUSTOM_ENV = EnvFamily(
    name="custom_env",
    train_script=_CUSTOM_ENV,
    register=f"{_CUSTOM_ENV}:register_custom_components",
    add_args=f"{_CUSTOM_ENV}:add_custom_env_args",
    override_defaults=f"{_CUSTOM_ENV}:custom_env_override_defaults",
    env_names=frozenset({"my_custom_env_v1"}),
)
CUSTOM_MULTI_ENV = EnvFamily(
    name="custom_multi_env",
    train_script=_CUSTOM_MULTI_ENV,
    register=f"{_CUSTOM_MULTI_ENV}:register_multi_env_components",
    add_args=f"{_CUSTOM_MULTI_ENV}:add_multi_env_args",
    override_defaults=f"{_CUSTOM_MULTI_ENV}:multi_env_override_defaults",
    env_names=frozenset({"my_custom_multi_env_v1"}),
)
BATCHED_CARTPOLE = EnvFamily(
    name="batched_cartpole",
    train_script="sf_examples.train_batched_cartpole",
    register="sf_examples.batched_cartpole:register_batched_cartpole",
    add_args="sf_examples.batched_cartpole:add_batched_cartpole_args",
    override_defaults="sf_examples.train_batched_cartpole:batched_cartpole_override_defaults",
    env_names=frozenset({"batched_cartpole"}),
)
# everything no other family owns: a Gymnasium id, or "module:EnvId" for ids registered when module is imported
GYM = EnvFamily(
    name="gym",
    train_script="sf_examples.train_gym_env",
    register=f"{_GYM_UTILS}:register_gym_env",
    add_args=f"{_GYM_UTILS}:add_gym_env_args",
    override_defaults=f"{_GYM_UTILS}:gym_override_defaults",
    env_name_first=True,
)
EXAMPLE_FAMILIES: tuple[EnvFamily, ...] = (VIZDOOM, CUSTOM_ENV, CUSTOM_MULTI_ENV, BATCHED_CARTPOLE)


def family_of(env_name: str) -> EnvFamily:
    """The family that owns ``env_name``; a name no example family owns is taken for a Gymnasium id."""
    return next((family for family in EXAMPLE_FAMILIES if family.owns(env_name)), GYM)


def add_family_args(
    parser: argparse.ArgumentParser, env_name: str, evaluation: bool = False, custom_registration: bool = False
) -> None:
    """Add the flags and defaults of ``env_name``'s family to ``parser``, as the family's train script does.

    Call it between ``parse_sf_args`` and ``parse_full_cfg``; flags given on the command line still win over the
    defaults. ``evaluation`` selects the family's watching/evaluation defaults and makes the "train it first" hint
    name its train script. ``custom_registration``: a ``--registration_func`` registers the env, so a name no
    example family owns is not a Gymnasium id and gets no Gymnasium defaults.
    """
    family = family_of(env_name)
    if custom_registration and family is GYM:
        return
    if family.add_args:
        family.call(family.add_args, env_name, parser)
    if family.override_defaults:
        evaluation_kwargs = {"evaluation": evaluation} if family.defaults_take_evaluation else {}
        family.call(family.override_defaults, env_name, parser, **evaluation_kwargs)
    if evaluation:
        parser.set_defaults(train_script=family.train_script)


def register_family_env(env_name: str) -> None:
    """Register ``env_name`` and its family's models so that ``create_env`` and the model factory know them.

    Raises UnknownEnvError when the family does not know the name (an unknown Gymnasium id, a misspelt ``doom_*``
    name), so a typo fails here with the list of valid names instead of later inside a worker process.
    """
    family = family_of(env_name)
    family.call(family.register, env_name)
    get_make_env_func(env_name)
