"""Git provenance of a run: work tree, commit hash and the uncommitted diff; None outside a work tree."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sample_factory.utils.utils import get_git_commit_hash, git_root, save_git_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env)
    return result.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    _git(root, "add", "a.txt")
    _git(root, "commit", "-q", "-m", "first")
    return root


def test_root_and_commit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Path(git_root(str(repo / "sub"))).resolve() == repo.resolve()
    assert get_git_commit_hash(str(repo)) == _git(repo, "rev-parse", "HEAD")
    monkeypatch.chdir(repo / "sub")  # SF2's calls take no arguments: the current folder's work tree
    assert get_git_commit_hash() == _git(repo, "rev-parse", "HEAD")


def test_diff_holds_uncommitted_changes(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "exp"
    assert Path(save_git_diff(str(out), cwd=str(repo))).read_text() == ""  # clean tree: an empty diff
    (repo / "a.txt").write_text("two\n")
    diff = Path(save_git_diff(str(out), cwd=str(repo))).read_text()
    assert "-one" in diff and "+two" in diff


def test_outside_a_work_tree(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_root(str(plain)) is None and get_git_commit_hash(str(plain)) is None
    assert save_git_diff(str(tmp_path / "exp"), cwd=str(plain)) is None
    assert not (tmp_path / "exp").exists()
