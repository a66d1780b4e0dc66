"""bench/startup_compare.py: its argument and log parsing, the table, and whole comparisons of stand-in checkouts
(folders whose ``sf_examples.train_gym_env`` prints the two lines the script reads, after given delays)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("startup_compare", REPO_ROOT / "bench" / "startup_compare.py")
startup_compare = importlib.util.module_from_spec(_spec)
sys.modules["startup_compare"] = startup_compare
_spec.loader.exec_module(startup_compare)

STAND_IN = """\
import datetime, sys, time

def stamp():
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

time.sleep({start})
print(f"\\x1b[36m[{{stamp()}}][123] All 5 components ready, collecting experience\\x1b[0m", flush=True)
print(f"[{{stamp()}}][123] Reached 100352 env steps (--train_for_env_steps=100000)", flush=True)
time.sleep({stop})
sys.exit({code})
"""


def _checkout(root: Path, start: float, stop: float, code: int = 0) -> Path:
    package = root / "sf_examples"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "train_gym_env.py").write_text(STAND_IN.format(start=start, stop=stop, code=code))
    return root


def test_a_label_names_a_checkout_and_its_environment(tmp_path: Path) -> None:
    variant = startup_compare.parse_variant(f"spawn={tmp_path}:SF_WORKER_START_METHOD=spawn,OMP_NUM_THREADS=1")
    assert variant.label == "spawn" and variant.root == tmp_path
    assert variant.env == {"SF_WORKER_START_METHOD": "spawn", "OMP_NUM_THREADS": "1"}
    assert startup_compare.parse_variant(f"plain={tmp_path}").env == {}
    with pytest.raises(argparse.ArgumentTypeError, match="label=path"):
        startup_compare.parse_variant("no-path")


def test_the_lines_are_found_with_and_without_colour_codes() -> None:
    text = (
        "\x1b[36m[2026-11-25 10:00:01,250][42] All 5 components ready, collecting experience\x1b[0m\n"
        "[2026-11-25 10:00:09,000][42] Reached 100352 env steps (--train_for_env_steps=100000)\n"
    )
    ready, reached = startup_compare.READY.search(text), startup_compare.REACHED.search(text)
    assert startup_compare.log_time(reached.group(1)) - startup_compare.log_time(ready.group(1)) == pytest.approx(7.75)


def test_the_table_gives_each_variants_medians() -> None:
    timings = startup_compare.Timings
    results = {
        "a": [timings(1.0, 2.0, 10.0), timings(3.0, 1.0, 30.0), timings(2.0, 9.0, 20.0)],
        "b": [timings(0.5, 0.5, 5.0)],
    }
    lines = startup_compare.table("cartpole", results).splitlines()
    assert lines[0] == "cartpole (median of 1 runs each)"
    assert lines[3] == "| to first frame, s | 2.0 | 0.5 |"
    assert lines[4] == "| after last frame, s | 2.0 | 0.5 |"
    assert lines[5] == "| whole process, s | 20.0 | 5.0 |"


def test_a_whole_comparison_measures_the_delays_of_each_checkout(tmp_path: Path) -> None:
    slow = _checkout(tmp_path / "slow", start=1.5, stop=1.0)
    fast = _checkout(tmp_path / "fast", start=0.2, stop=0.1)
    script = str(REPO_ROOT / "bench" / "startup_compare.py")
    args = [f"--label=slow={slow}", f"--label=fast={fast}", "--reps=1", f"--scratch={tmp_path / 'out'}", "cartpole"]
    began = time.monotonic()
    result = subprocess.run([sys.executable, script, f"--python={sys.executable}", *args], capture_output=True,
                            text=True, timeout=120, env={**os.environ})  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split("|")[1].strip(): line.split("|")[2:4] for line in result.stdout.splitlines() if "| " in line}
    slow_first, fast_first = (float(x) for x in rows["to first frame, s"])
    slow_last, fast_last = (float(x) for x in rows["after last frame, s"])
    assert slow_first >= 1.5 > fast_first and slow_last >= 1.0 > fast_last
    assert time.monotonic() - began >= 2.5  # both stand-ins ran


def test_a_run_without_its_lines_names_its_log(tmp_path: Path) -> None:
    broken = _checkout(tmp_path / "broken", start=0.0, stop=0.0, code=3)
    variant = startup_compare.parse_variant(f"broken={broken}")
    with pytest.raises(RuntimeError, match=r"exit 3.*broken\.log"):
        startup_compare.run_once(variant, "cartpole", tmp_path / "t", tmp_path / "broken.log", sys.executable)
