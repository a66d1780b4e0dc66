"""Env families: how tools that know an env only by name find its flags, defaults and registration.

A family's own train script registers its envs and sets its flags itself. Generic tools (``python -m
sample_factory.eval``, throughput tools) get only ``--env``; they ask this registry, which the library owns and
the families fill. A family is announced in one of two ways, and the library never names a family module itself:

- a module calls :func:`register_env_family` (directly, or from a function that ``--registration_func`` names);
- an installed package lists a function in the ``sample_factory.env_families`` entry-point group (this
  repository's examples do, in setup.py); :func:`discover_env_families` calls every such function.

Hooks are ``"module:function"`` strings imported only when used, so announcing a family is cheap and a simulator
(VizDoom, ...) is imported only for the envs that need it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from sample_factory.envs.env_utils import UnknownEnvError, get_make_env_func, register_with_func
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

ENTRY_POINT_GROUP = "sample_factory.env_families"


@dataclass(frozen=True)
class EnvFamily:
    """One env family: the env names it owns and its hooks as ``"module:function"`` references.

    ``register()`` registers the family's envs and models, ``add_args(parser)`` adds the family's own flags and
    ``override_defaults(parser)`` sets its defaults on Sample Factory's flags. Hooks that take the env name as their
    first argument set ``env_name_first``; defaults that differ when watching/evaluating set
    ``defaults_take_evaluation`` (the function accepts ``evaluation=``). A ``fallback`` family owns every name that
    no other family owns (the Gymnasium family: any Gymnasium id).
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
    fallback: bool = False

    def owns(self, env_name: str) -> bool:
        return env_name in self.env_names or bool(self.env_prefix and env_name.startswith(self.env_prefix))

    def call(self, hook: str, env_name: str, *args: Any, **kwargs: Any) -> Any:
        """Import and call one hook with this family's calling convention."""
        func = resolve_hook(hook)
        return func(env_name, *args, **kwargs) if self.env_name_first else func(*args, **kwargs)


def resolve_hook(hook: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` reference names (importing its module)."""
    module_name, _, func_name = hook.partition(":")
    return getattr(importlib.import_module(module_name), func_name)


# family name -> family; process-wide and never reset, since only the main process of a tool reads it
_FAMILIES: dict[str, EnvFamily] = {}


def _families() -> dict[str, EnvFamily]:
    return _FAMILIES


def register_env_family(family: EnvFamily) -> None:
    """Add ``family`` (or replace the family of the same name, so re-registering is harmless)."""
    _families()[family.name] = family


def registered_env_families() -> list[EnvFamily]:
    return list(_families().values())


def discover_env_families() -> list[str]:
    """Call every function of the ``sample_factory.env_families`` entry-point group; return their names.

    A broken plugin is reported and skipped: one bad package must not stop evaluation of the others' envs.
    """
    found = []
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry_point.load()()
            found.append(entry_point.name)
        except Exception as exc:  # a third-party plugin can fail in any way
            log.warning("Env family plugin %s (%s) failed to load: %s", entry_point.name, entry_point.value, exc)
    return found


def family_of(env_name: str) -> EnvFamily | None:
    """The family that owns ``env_name``: one that names it, else the fallback family, else None."""
    families = registered_env_families()
    owner = next((f for f in families if not f.fallback and f.owns(env_name)), None)
    return owner or next((f for f in families if f.fallback), None)


def add_family_args(
    parser: argparse.ArgumentParser, env_name: str, evaluation: bool = False, custom_registration: bool = False
) -> None:
    """Add the flags and defaults of ``env_name``'s family to ``parser``, as the family's train script does.

    Call it between ``parse_sf_args`` and ``parse_full_cfg``; flags given on the command line still win over the
    defaults. ``evaluation`` selects the family's watching/evaluation defaults and makes the "train it first" hint
    name its train script. ``custom_registration``: a ``--registration_func`` registers the env, so a name that
    only the fallback family would take gets no family defaults.
    """
    family = family_of(env_name)
    if family is None or (custom_registration and family.fallback):
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

    Raises UnknownEnvError when no family knows the name (an unknown Gymnasium id, a misspelt ``doom_*`` name,
    no family installed), so a typo fails here with the list of valid names instead of inside a worker process.
    """
    family = family_of(env_name)
    if family is not None:
        family.call(family.register, env_name)
    get_make_env_func(env_name)


def register_cfg_env(cfg: Config) -> None:
    """Make ``cfg.env`` creatable for a tool that runs an env outside training (``sample_factory.eval``, the Hub
    upload, the random-policy sampler): ``--registration_func`` when given, otherwise the env's family.

    Imports nothing heavy (no torch), so a tool that only samples an env starts fast and a bad name fails at once.
    """
    if cfg.env is None:
        raise UnknownEnvError("--env is required: the env the experiment was trained on, e.g. --env=CartPole-v1")
    if cfg.registration_func:
        register_with_func(cfg.registration_func, cfg.env)
    elif family_of(cfg.env) is not None:
        register_family_env(cfg.env)
    else:
        raise UnknownEnvError(
            f"--env={cfg.env} is not registered and no installed env family owns it: pass "
            f"--registration_func=module:function naming the function that registers it (or install the package "
            f"that provides its family)"
        )
