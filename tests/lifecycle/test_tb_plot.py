"""``sample_factory.utils.tb`` builds a named --logdir_spec; ``sample_factory.utils.plot`` draws PNG curves."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from tensorboardX import SummaryWriter

from sample_factory.utils import plot, tb

TAGS = ["0_aux/avg_reward", "0_aux/avg_len", "perf/_fps", "train/policy_loss", "train/value_loss", "train/entropy"]


def _fake_experiment(folder: Path, scale: float, policies: int = 1) -> Path:
    for policy in range(policies):
        writer = SummaryWriter(str(folder / ".summary" / str(policy)))
        for i in range(60):
            step = i * 5000
            for k, tag in enumerate(TAGS):
                writer.add_scalar(tag, scale * (k + 1) * (1 - math.exp(-i / 15)) + math.sin(i) + policy, step)
        writer.close()
    return folder


@pytest.fixture
def experiments(tmp_path: Path) -> Path:
    _fake_experiment(tmp_path / "runs" / "cartpole_a", 100.0)
    _fake_experiment(tmp_path / "runs" / "cartpole_b", 60.0, policies=2)
    _fake_experiment(tmp_path / "runs" / "doom_c", 10.0)
    (tmp_path / "runs" / "not_an_experiment").mkdir()
    return tmp_path / "runs"


def test_tb_dry_run_prints_logdir_spec_of_matching_experiments(experiments: Path, capsys) -> None:
    assert tb.main(["cartpole_*", f"--train_dir={experiments}", "--dry_run", "--port=7007"]) == 0
    out = capsys.readouterr().out
    spec = f"--logdir_spec=cartpole_a:{experiments}/cartpole_a/.summary,cartpole_b:{experiments}/cartpole_b/.summary"
    assert spec in out and "--port=7007" in out and "tensorboard" in out
    assert "doom_c" not in out


def test_tb_parent_folder_mask_and_name_collisions(tmp_path: Path, capsys) -> None:
    _fake_experiment(tmp_path / "a" / "run", 1.0)
    _fake_experiment(tmp_path / "b" / "run", 1.0)
    assert tb.main([str(tmp_path), "--dry_run"]) == 0
    assert "a/run:" in capsys.readouterr().out


def test_tb_missing_tensorboard_names_the_install_command(experiments: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(tb, "is_module_available", lambda name: False)
    assert tb.main([str(experiments / "doom_*")]) == 1
    assert "pip install tensorboard" in capsys.readouterr().err


def test_tb_no_match_is_an_error(tmp_path: Path, capsys) -> None:
    assert tb.main([str(tmp_path / "nothing_*"), "--dry_run"]) == 1
    assert "No experiment folder" in capsys.readouterr().err


def test_plot_writes_png_with_overlaid_curves(experiments: Path, tmp_path: Path) -> None:
    out = tmp_path / "curves.png"
    folders = [str(experiments / name) for name in ("cartpole_a", "cartpole_b")]
    assert plot.main([*folders, "-o", str(out), "--title", "test"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 30_000
    image = matplotlib.image.imread(str(out))[..., :3]
    assert image.shape[0] > 600 and image.shape[1] > 1200
    coloured = np.abs(image - image.mean(axis=-1, keepdims=True)).max(axis=-1) > 0.15  # non-grey pixels: curves
    assert coloured.mean() > 0.005


def test_plot_reads_every_policy_and_rejects_non_experiments(experiments: Path, tmp_path: Path) -> None:
    curves = plot.experiment_curves(str(experiments / "cartpole_b"))
    assert sorted(curves) == ["cartpole_b/p0", "cartpole_b/p1"]
    assert len(curves["cartpole_b/p1"]["0_aux/avg_reward"]) == 60
    assert plot.main([str(experiments / "not_an_experiment"), "-o", str(tmp_path / "x.png")]) == 1


def test_smoothing_is_debiased() -> None:
    assert plot.smooth(np.array([5.0, 5.0, 5.0]), 0.9) == pytest.approx([5.0, 5.0, 5.0])
