"""The process-wide registries of the public API, together: the env registry and the model factory.

Each registry belongs to its room (``envs.env_registry``, ``model.model_factory``); this module bundles them into
one picklable :class:`SampleFactoryContext`, so registrations made in the main process before training starts
travel to worker processes with the spawn arguments (``set_global_context`` in the child installs them). User code
registers its envs and models once, at import or in ``main()``.
"""

from __future__ import annotations

from sample_factory.envs.env_registry import global_env_registry, set_global_env_registry
from sample_factory.model.model_factory import ModelFactory, global_model_factory, set_global_model_factory
from sample_factory.utils.typing import CreateEnvFunc

__all__ = [
    "SampleFactoryContext",
    "global_env_registry",
    "global_model_factory",
    "reset_global_context",
    "set_global_context",
    "sf_global_context",
]


class SampleFactoryContext:
    """The env registry (name -> make_env_func) and the model factory of a process."""

    def __init__(
        self, env_registry: dict[str, CreateEnvFunc] | None = None, model_factory: ModelFactory | None = None
    ) -> None:
        self.env_registry = {} if env_registry is None else env_registry
        self.model_factory = ModelFactory() if model_factory is None else model_factory


def sf_global_context() -> SampleFactoryContext:
    """This process's registries (the live objects: registering through them registers for the process)."""
    return SampleFactoryContext(global_env_registry(), global_model_factory())


def set_global_context(ctx: SampleFactoryContext) -> None:
    set_global_env_registry(ctx.env_registry)
    set_global_model_factory(ctx.model_factory)


def reset_global_context() -> None:
    set_global_context(SampleFactoryContext())
