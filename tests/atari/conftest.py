"""Fixtures of the Atari tests: skip without ale-py (its wheels ship the game ROMs)."""

from __future__ import annotations

import pytest

pytest.importorskip("ale_py")
