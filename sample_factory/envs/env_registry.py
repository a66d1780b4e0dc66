"""The process's env registry: env name -> ``make_env_func(full_env_name, cfg, env_config, render_mode)``.

``env_utils.register_env`` fills it; ``create_env`` reads it. Worker processes receive it with the rest of the
process's registrations (``sample_factory.algo.utils.context``), so user code registers its envs once.
"""

from __future__ import annotations

from sample_factory.utils.typing import CreateEnvFunc

_env_registry: dict[str, CreateEnvFunc] | None = None


def global_env_registry() -> dict[str, CreateEnvFunc]:
    global _env_registry
    if _env_registry is None:
        _env_registry = {}
    return _env_registry


def set_global_env_registry(registry: dict[str, CreateEnvFunc]) -> None:
    global _env_registry
    _env_registry = registry
