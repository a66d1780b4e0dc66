"""Fixtures of the MuJoCo tests: skip without mujoco, and a clean model/env registry per in-process test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sample_factory.algo.utils.context import reset_global_context

pytest.importorskip("mujoco")


@pytest.fixture
def clean_context() -> Iterator[None]:
    """In-process tests register envs; start and end with empty registries."""
    reset_global_context()
    yield
    reset_global_context()
