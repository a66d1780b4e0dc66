"""Env tests start from an empty env registry so registrations cannot leak between tests."""

import pytest

from sample_factory.algo.utils.context import reset_global_context


@pytest.fixture(autouse=True)
def fresh_registry():
    reset_global_context()
    yield
    reset_global_context()
