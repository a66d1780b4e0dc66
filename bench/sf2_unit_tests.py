"""Run Sample Factory 2's own unit tests against this package and print pass/fail counts per file.

Sample Factory 2's tests are a behavioural specification of the API this package reproduces. They are not part of
this repository: point the script at a checkout of Sample Factory 2 (only its ``tests/`` folder is used), e.g.

    git clone --branch v2.1.1 https://github.com/alex-petrenko/sample-factory /tmp/sf2
    python bench/sf2_unit_tests.py --sf2=/tmp/sf2

The script copies ``<sf2>/tests`` into a scratch folder (adding the ``__init__.py`` files that make ``tests.*``
importable), writes an empty ``pytest.ini`` there so that neither repository's pytest configuration applies, and
runs each file with pytest from that folder with this repository first on ``PYTHONPATH``. Sample Factory 2's own
``sample_factory`` and ``sf_examples`` packages are never copied, so every import resolves to this package; the
script checks that before running anything. Nothing is downloaded.

Exit code: 0 when every selected file ran without failures or errors, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the unit tests that exercise the package's API without an env family's simulator (docs/coming_from_sf2.md)
DEFAULT_FILES = (
    "tests/algo/test_tensordict.py",
    "tests/algo/test_rms.py",
    "tests/algo/test_action_distributions.py",
    "tests/algo/test_model.py",
    "tests/algo/test_rnn.py",
    "tests/algo/test_model_builder.py",
    "tests/algo/test_learner.py",
    "tests/algo/test_pbt.py",
    "tests/test_precheck.py",
    "tests/test_utils.py",
    "tests/test_launcher.py",
)


@dataclass
class FileResult:
    path: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    problem: str = ""  # why the file produced no result (collection error, timeout)

    @property
    def cases(self) -> int:
        return self.passed + self.failed + self.errors


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf2", required=True, help="Folder of a Sample Factory 2 checkout (the one holding tests/).")
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES), help="Test files, relative to --sf2.")
    parser.add_argument("--scratch", default=None, help="Scratch folder to run in (default: a new temporary one).")
    parser.add_argument("--timeout_s", type=float, default=900.0, help="Time limit of each file's pytest run.")
    parser.add_argument("--python", default=sys.executable, help="Interpreter with this package's dependencies.")
    return parser.parse_args(argv)


def prepare_scratch(sf2: str, scratch: str) -> None:
    """``<scratch>/tests``: a copy of Sample Factory 2's tests folder in which every folder is a package."""
    source = os.path.join(sf2, "tests")
    if not os.path.isdir(source):
        raise SystemExit(f"--sf2={sf2}: no tests/ folder there; pass the root of a Sample Factory 2 checkout")
    target = os.path.join(scratch, "tests")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder, _, files in os.walk(target):
        if "__init__.py" not in files:
            open(os.path.join(folder, "__init__.py"), "w").close()  # `from tests.examples... import` needs packages
    with open(os.path.join(scratch, "pytest.ini"), "w") as f:
        f.write("[pytest]\n")  # this folder is the rootdir: no other project's pytest settings apply


def check_imports_resolve_here(python: str, scratch: str, env: dict[str, str]) -> None:
    """Refuse to run when ``sample_factory`` or ``sf_examples`` would be imported from anywhere but this repo."""
    code = "import sample_factory, sf_examples; print(sample_factory.__file__); print(sf_examples.__file__)"
    out = subprocess.run([python, "-c", code], cwd=scratch, env=env, capture_output=True, text=True, check=True)
    for path in out.stdout.split():
        if not os.path.abspath(path).startswith(REPO_ROOT + os.sep):
            raise SystemExit(f"{path} shadows this package: remove it from the scratch folder or the environment")


def run_file(python: str, scratch: str, env: dict[str, str], path: str, timeout_s: float) -> FileResult:
    result = FileResult(path)
    if not os.path.isfile(os.path.join(scratch, path)):
        result.problem = "no such file in the checkout"
        return result
    report = os.path.join(scratch, "junit.xml")
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", path]
    try:
        subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        result.problem = f"timed out after {timeout_s:.0f} s"
        return result
    return read_junit(report, result)


def read_junit(report: str, result: FileResult) -> FileResult:
    """Counts per outcome from pytest's JUnit XML; a module that did not import becomes ``problem`` instead."""
    for case in ET.parse(report).getroot().iter("testcase"):
        outcomes = {child.tag: child for child in case}
        error = outcomes.get("error")
        if error is not None and error.get("message") == "collection failure":
            lines = [line.strip() for line in (error.text or "").splitlines() if line.strip().startswith("E ")]
            result.problem = "collection error: " + (lines[-1][1:].strip() if lines else "see pytest's output")
        elif "skipped" in outcomes:
            result.skipped += 1
        elif error is not None:
            result.errors += 1
        elif "failure" in outcomes:
            result.failed += 1
        else:
            result.passed += 1
    return result


def format_report(results: list[FileResult]) -> str:
    width = max(len(r.path) for r in results)
    lines = [f"{'file':<{width}}  passed / cases  failed  errors  skipped"]
    for r in results:
        counts = f"{r.passed:>6} / {r.cases:<5}  {r.failed:>6}  {r.errors:>6}  {r.skipped:>7}"
        lines.append(f"{r.path:<{width}}  {counts}" + (f"  {r.problem}" if r.problem else ""))
    total_passed, total_cases = sum(r.passed for r in results), sum(r.cases for r in results)
    lines.append(f"{'total':<{width}}  {total_passed:>6} / {total_cases:<5}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scratch = args.scratch or tempfile.mkdtemp(prefix="sf2_unit_tests_")
    os.makedirs(scratch, exist_ok=True)
    prepare_scratch(os.path.abspath(args.sf2), scratch)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    check_imports_resolve_here(args.python, scratch, env)
    results = []
    for path in args.files:
        results.append(run_file(args.python, scratch, env, path, args.timeout_s))
        print(f"[sf2_unit_tests] {path}: {results[-1].passed} passed of {results[-1].cases}", flush=True)
    print(format_report(results))
    return 0 if all(r.failed == r.errors == 0 and not r.problem for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
