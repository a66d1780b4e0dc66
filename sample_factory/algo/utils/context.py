"""Process-wide registries required by the public API: env registry and model factory.

Registrations made in the main process before training starts are carried to
worker processes (the context is pickled with the spawn arguments), so user code
registers its envs and models once, at import or in ``main()``.
"""

from __future__ import annotations

from sample_factory.model.model_factory import ModelFactory
from sample_factory.utils.typing import CreateEnvFunc


class SampleFactoryContext:
    """Holds the env registry (name -> make_env_func) and the model factory."""

    def __init__(self) -> None:
        self.env_registry: dict[str, CreateEnvFunc] = {}
        self.model_factory = ModelFactory()


_context: SampleFactoryContext | None = None


def sf_global_context() -> SampleFactoryContext:
    global _context
    if _context is None:
        _context = SampleFactoryContext()
    return _context


def set_global_context(ctx: SampleFactoryContext) -> None:
    global _context
    _context = ctx


def reset_global_context() -> None:
    global _context
    _context = SampleFactoryContext()


def global_env_registry() -> dict[str, CreateEnvFunc]:
    return sf_global_context().env_registry


def global_model_factory() -> ModelFactory:
    return sf_global_context().model_factory
