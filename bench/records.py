"""Measured results as data: one JSON record per measured run, appended to a JSON-lines file under bench/results/.

Every benchmark script of ``bench/`` (the comparison with Sample Factory 2.1.1, the start-up comparison, the zoo)
writes records through :func:`append`; ``docs/benchmarks.md`` and ``docs/zoo.md`` are generated from them
(``python docs/gen_results.py``, part of ``make docs``). A record says what was run and where, so a figure can be
traced back and compared only with figures of the same kind of machine:

- ``kind``: ``compare_sf2`` (one pair of runs, ours and the reference), ``compare_sf2_set`` (the medians of a set
  whose pairs were not kept), ``startup`` (one variant's start-up figures), ``zoo`` (one trained task);
- ``set``: the id shared by the records of one invocation of a script (its start time and commit);
- ``date`` (UTC, ISO 8601), ``commit`` (of this repository; ``+dirty`` when the tree had changes), ``command``;
- ``machine``: CPU model, logical cores, memory, GPU; ``versions``: Python and the packages a figure depends on;
- ``workload`` and ``figures``: what was measured (each kind's keys are documented where it is written).

Records are only ever appended; nothing rewrites an older one.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# SF_BENCH_RESULTS_DIR moves the records elsewhere (the test suite points it at a scratch folder)
RESULTS_DIR = Path(os.environ.get("SF_BENCH_RESULTS_DIR") or REPO_ROOT / "bench" / "results")
# distributions whose versions a figure depends on (those not installed are left out)
VERSIONED = ("torch", "numpy", "gymnasium", "sample-factory", "vizdoom", "mujoco", "ale-py", "envpool", "nle", "brax")

Record = dict[str, Any]


def results_file(kind: str, results_dir: Path = RESULTS_DIR) -> Path:
    """The JSON-lines file of a kind of record (``compare_sf2_set`` records live with ``compare_sf2``)."""
    base = "compare_sf2" if kind.startswith("compare_sf2") else kind
    return results_dir / f"{base}.jsonl"


def git_commit(root: Path = REPO_ROOT) -> str:
    """The short commit of ``root``, with ``+dirty`` when tracked files differ from it; ``unknown`` outside git.

    The records' own files do not count: a benchmark that appends a record per run would otherwise mark every run
    after its first as made by uncommitted code."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        diff = ["git", "diff", "--quiet", "HEAD", "--", ":(top)", ":(top,exclude)bench/results"]
        dirty = subprocess.run(diff, cwd=root, capture_output=True).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """CPU model, logical cores, memory and GPU of this machine."""
    cpu = platform.processor() or "unknown CPU"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as cpuinfo:
            names = [line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")]
        cpu = names[0] if names else cpu
    memory_gib = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory_gib = round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1)
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory_gib, "gpu": gpu_name()}


def gpu_name() -> str:
    """The first NVIDIA GPU's name as ``nvidia-smi`` gives it, or ``none`` (torch is not imported for this)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    names = out.stdout.strip().splitlines() if out.returncode == 0 else []
    return names[0] if names else "none"


def versions(python: str | None = None) -> dict[str, str]:
    """Python's version and those of the distributions in VERSIONED, of this interpreter or of ``python``."""
    if python is None:
        found = {"python": platform.python_version()}
        for name in VERSIONED:
            try:
                found[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                pass
        return found
    probe = (
        "import importlib.metadata as m, json, platform, sys\n"
        "v = {'python': platform.python_version()}\n"
        "for n in sys.argv[1:]:\n"
        "    try: v[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(v))"
    )
    out = subprocess.run([python, "-c", probe, *VERSIONED], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def new_set_id(kind: str, commit: str | None = None) -> str:
    """The id of one invocation of a benchmark: kind, UTC start time and commit."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{kind}-{stamp}-{commit or git_commit()}"


def make_record(kind: str, set_id: str, command: str, workload: str, figures: dict[str, Any], **extra: Any) -> Record:
    """A record of this machine and interpreter now; ``extra`` adds keys (e.g. the reference's versions)."""
    record: Record = {
        "kind": kind,
        "set": set_id,
        "date": utc_now(),
        "commit": git_commit(),
        "command": command,
        "machine": machine(),
        "versions": versions(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "workload": workload,
        "figures": figures,
    }
    record.update(extra)
    return record


def append(records: Iterable[Record], results_dir: Path = RESULTS_DIR) -> list[Path]:
    """Append records to their kinds' files (created when missing); returns the files written."""
    written: list[Path] = []
    for record in records:
        path = results_file(record["kind"], results_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record, sort_keys=True) + "\n")
        if path not in written:
            written.append(path)
    return written


def load(kind: str | None = None, results_dir: Path = RESULTS_DIR) -> list[Record]:
    """Every record (of ``kind``, when given), in the order they were written; a broken line is an error."""
    records: list[Record] = []
    for path in sorted(results_dir.glob("*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: not a JSON record ({exc}); fix or remove the line") from exc
                if kind is None or record.get("kind") == kind:
                    records.append(record)
    return records
