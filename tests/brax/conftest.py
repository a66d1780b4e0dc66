"""Fixtures of the Brax tests: a per-session jax compilation cache, so that the processes of one test run compile
each program once, and a clean env registry for in-process tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from sample_factory.algo.utils.context import reset_global_context


@pytest.fixture(scope="session", autouse=True)
def jax_compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Child processes (train, then enjoy) reuse the jitted programs compiled before them in this session."""
    old = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path_factory.mktemp("jax_cache"))
    yield
    if old is None:
        os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
    else:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = old


@pytest.fixture
def clean_context() -> Iterator[None]:
    """In-process tests register envs; start and end with empty registries."""
    reset_global_context()
    yield
    reset_global_context()
