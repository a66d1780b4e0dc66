"""Folders and files of an experiment, as ``sample_factory.utils.utils`` exposes them under SF2's names."""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path

import pytest

from sample_factory.utils import paths
from sample_factory.utils.utils import (
    cfg_file,
    cfg_file_old,
    checkpoint_dir,
    experiment_dir,
    experiments_dir,
    get_free_disk_space_mb,
    get_username,
    maybe_ensure_dir_exists,
    remove_if_exists,
    summaries_dir,
    wandb_dir,
)


def _cfg(tmp_path: Path) -> Namespace:
    return Namespace(train_dir=str(tmp_path / "train_dir"), experiment="exp")


def test_experiment_layout(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    root = tmp_path / "train_dir"
    assert experiments_dir(cfg, mkdir=False) == str(root) and not root.exists()
    assert experiments_dir(cfg) == str(root) and root.is_dir()
    exp = experiment_dir(cfg)
    assert exp == str(root / "exp")
    assert summaries_dir(experiment_dir_=exp) == str(root / "exp" / ".summary")
    assert checkpoint_dir(cfg, 2) == str(root / "exp" / "checkpoint_p2")
    assert wandb_dir(cfg, mkdir=False) == str(root / "exp" / "wandb") and not (root / "exp" / "wandb").exists()
    assert wandb_dir(cfg) == str(root / "exp" / "wandb") and (root / "exp" / "wandb").is_dir()
    assert cfg_file(cfg) == str(root / "exp" / "config.json")
    assert cfg_file_old(cfg) == str(root / "exp" / "cfg.json")


def test_maybe_ensure_dir_exists(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    assert maybe_ensure_dir_exists(str(target), mkdir=False) == str(target) and not target.exists()
    assert maybe_ensure_dir_exists(str(target), mkdir=True) == str(target) and target.is_dir()


def test_remove_if_exists(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("x")
    assert remove_if_exists(str(file)) is True and not file.exists()
    assert remove_if_exists(str(file)) is False
    with pytest.raises(IsADirectoryError, match="shutil.rmtree"):
        remove_if_exists(str(tmp_path))
    assert tmp_path.is_dir()


def test_get_username_matches_the_process_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGNAME", "someone")
    assert get_username() == "someone"


def test_free_disk_space_of_a_train_dir_not_yet_created(tmp_path: Path) -> None:
    cfg = Namespace(train_dir=str(tmp_path / "not" / "yet"), experiment="e")
    stat = os.statvfs(tmp_path)
    expected = stat.f_bavail * stat.f_frsize / (1024 * 1024)
    # the file system is shared with other processes, so allow for what they write meanwhile
    assert get_free_disk_space_mb(cfg) == pytest.approx(expected, rel=0.05, abs=64)
    assert not (tmp_path / "not").exists()


def test_utils_reexports_the_paths_module() -> None:
    from sample_factory.utils import utils

    for name in paths.__all__:
        assert getattr(utils, name) is getattr(paths, name)
