"""The skip mark of the Brax tests that need jax and brax installed."""

from __future__ import annotations

import importlib.util

import pytest

BRAX_MISSING = importlib.util.find_spec("brax") is None or importlib.util.find_spec("jax") is None
needs_brax = pytest.mark.skipif(BRAX_MISSING, reason="jax/brax are not installed (pip install 'sample-factory[brax]')")
