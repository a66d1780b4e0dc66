"""bench/fast_path_ab.py against a stand-in trainer whose FPS depends on the switch: alternated pairs, one seed per
pair, ratios on/off, and the records."""

from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest
from stand_in import stand_in_interpreter

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO_ROOT, "bench")
sys.path.insert(0, BENCH)
_spec = importlib.util.spec_from_file_location("fast_path_ab", os.path.join(BENCH, "fast_path_ab.py"))
fast_path_ab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fast_path_ab)

STAND_IN = """\
import os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
off = "glibc_internals" in os.environ.get("SF_DISABLE_FAST_PATHS", "")
print("seed", args["--seed"], "off" if off else "on")
print(f"Collected {{0: {args['--train_for_env_steps']}}}, FPS: {100.0 if off else 150.0}")
"""


@pytest.fixture
def stand_in_python(tmp_path):
    return stand_in_interpreter(tmp_path, STAND_IN)


def test_pairs_alternate_their_order_share_a_seed_and_are_recorded(stand_in_python, tmp_path, capsys):
    scratch, results = tmp_path / "scratch", tmp_path / "results"
    argv = ["glibc_internals", "doom_basic_matched", "--pairs=3", "--seed=4", f"--python={stand_in_python}"]
    assert fast_path_ab.main([*argv, f"--scratch={scratch}", f"--results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert "glibc_internals on doom_basic_matched: FPS on/off median 1.500" in out
    for pair, seed in enumerate((4, 5, 6)):
        assert (scratch / f"p{pair}_on.log").read_text().startswith(f"seed {seed} on")
        assert (scratch / f"p{pair}_off.log").read_text().startswith(f"seed {seed} off")
    written = [json.loads(line) for line in (results / "fast_path_ab.jsonl").read_text().splitlines()]
    assert [r["figures"]["order"] for r in written] == ["on, off", "off, on", "on, off"]
    assert {r["kind"] for r in written} == {"fast_path_ab"} and len({r["set"] for r in written}) == 1
    assert all(r["figures"]["fps_ratio"] == 1.5 and r["figures"]["module"] == "glibc_internals" for r in written)
    assert all(r["workload"] == "doom_basic_matched" for r in written)


def test_an_unknown_module_is_refused(capsys):
    with pytest.raises(SystemExit):
        fast_path_ab.parse_args(["glibc", "doom_basic_matched"])
    assert "invalid choice: 'glibc'" in capsys.readouterr().err
