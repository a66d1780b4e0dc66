"""Sample Factory 2's public surface stays importable here: every public function and class of SF2 2.1.1 and of its
main branch (``bench/data/sf2_public_surface.tsv``) at its SF2 module path, taking SF2's leading parameters.

``bench/sf2_surface.py`` is the checker (and prints the count); this test fails when a name that is present goes
missing, so a rename or a dropped parameter breaks a test rather than a user's project.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("sf2_surface", ROOT / "bench" / "sf2_surface.py")
sf2_surface = importlib.util.module_from_spec(_spec)
sys.modules["sf2_surface"] = sf2_surface
_spec.loader.exec_module(sf2_surface)

# names that are not here yet, each with the reason; the list may only shrink
KNOWN_MISSING: dict[str, str] = {}

ENTRIES = sf2_surface.read_surface()


def test_the_table_is_sample_factory_2s_588_names():
    assert len(ENTRIES) == 588


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.module}.{e.name}")
def test_the_name_is_present_with_sf2s_leading_parameters(entry):
    key = f"{entry.module}.{entry.name}"
    why = sf2_surface.check(entry)
    if key in KNOWN_MISSING:
        assert why is not None, f"{key} is present now: remove it from KNOWN_MISSING"
        return
    assert why is None, f"{key}: {why}"
