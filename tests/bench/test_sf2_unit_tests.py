"""bench/sf2_unit_tests.py on a stand-in checkout: per-file counts, package imports, and never the checkout's code."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("sf2_unit_tests", os.path.join(REPO_ROOT, "bench", "sf2_unit_tests.py"))
sf2_unit_tests = importlib.util.module_from_spec(_spec)
sys.modules["sf2_unit_tests"] = sf2_unit_tests
_spec.loader.exec_module(sf2_unit_tests)

PASSING = """
import sample_factory
from tests.helpers.shared import ANSWER  # a helper module of the checkout's tests folder, without __init__.py


def test_package_is_this_repository():
    assert sample_factory.__file__.startswith({repo!r})


def test_helper():
    assert ANSWER == 42
"""
FAILING = """
def test_fails():
    assert 1 == 2


def test_passes():
    pass
"""


def _checkout(tmp_path: Path) -> Path:
    """A stand-in Sample Factory 2 checkout: a tests folder with helpers, and a package that must not be imported."""
    root = tmp_path / "sf2"
    (root / "tests" / "algo").mkdir(parents=True)
    (root / "tests" / "helpers").mkdir()
    (root / "tests" / "helpers" / "shared.py").write_text("ANSWER = 42\n")
    (root / "tests" / "algo" / "test_ok.py").write_text(PASSING.format(repo=REPO_ROOT + os.sep))
    (root / "tests" / "algo" / "test_mixed.py").write_text(FAILING)
    (root / "tests" / "test_broken.py").write_text("from sample_factory.no_such_module import x\n")
    (root / "sample_factory").mkdir()
    (root / "sample_factory" / "__init__.py").write_text("raise RuntimeError('the checkout package was imported')\n")
    return root


def test_counts_per_file_with_this_package_on_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    root = _checkout(tmp_path)
    files = ["tests/algo/test_ok.py", "tests/algo/test_mixed.py", "tests/test_broken.py", "tests/missing.py"]
    code = sf2_unit_tests.main(["--sf2", str(root), "--scratch", str(tmp_path / "scratch"), "--files", *files])
    assert code == 1  # a failure, a collection error and a missing file
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("tests/")}
    assert rows["tests/algo/test_ok.py"].split()[1:4] == ["2", "/", "2"]
    assert rows["tests/algo/test_mixed.py"].split()[1:5] == ["1", "/", "2", "1"]
    assert "collection error: ModuleNotFoundError" in rows["tests/test_broken.py"]
    assert "no such file" in rows["tests/missing.py"]
    assert not (tmp_path / "scratch" / "sample_factory").exists()
    assert (tmp_path / "scratch" / "pytest.ini").is_file()


def test_a_folder_without_tests_is_refused(tmp_path: Path):
    with pytest.raises(SystemExit, match="no tests/ folder"):
        sf2_unit_tests.main(["--sf2", str(tmp_path), "--scratch", str(tmp_path / "scratch")])
