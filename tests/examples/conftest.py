"""Fixtures of the example tests; the subprocess helpers live in ``example_helpers``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sample_factory.algo.utils.context import reset_global_context


@pytest.fixture
def clean_context() -> Iterator[None]:
    """In-process tests register envs and encoders; start and end with empty registries."""
    reset_global_context()
    yield
    reset_global_context()
