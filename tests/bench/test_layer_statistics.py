"""bench/layer_statistics.py tells torch's default, orthogonal and zeroed parameters apart in a checkpoint."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

REPO_ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("layer_statistics", REPO_ROOT / "bench" / "layer_statistics.py")
layer_statistics = importlib.util.module_from_spec(_spec)
sys.modules["layer_statistics"] = layer_statistics
_spec.loader.exec_module(layer_statistics)


def test_statistics_separate_uniform_from_orthogonal_weights():
    torch.manual_seed(0)
    uniform = nn.Linear(256, 128).weight  # torch's default: uniform within 1/sqrt(256)
    orthogonal = nn.init.orthogonal_(torch.empty(128, 256))
    u, o = layer_statistics.tensor_statistics(uniform), layer_statistics.tensor_statistics(orthogonal)
    assert u["max_abs"] <= 256**-0.5 and u["kurtosis"] == pytest.approx(1.8, abs=0.1)
    assert o["row_norm"] == pytest.approx(1.0, abs=1e-4) and o["kurtosis"] == pytest.approx(3.0, abs=0.3)
    assert u["row_norm"] == pytest.approx(3**-0.5, abs=0.02)


def test_a_checkpoint_file_is_read_and_normalisers_and_zeros_are_handled(tmp_path, capsys):
    model = nn.Sequential(nn.Linear(4, 3))
    state = {**model.state_dict(), "obs_normalizer.running_mean": torch.zeros(4), "count": torch.ones(1)}
    state["0.bias"] = torch.zeros(3)
    path = tmp_path / "checkpoint.pth"
    torch.save({"model": state, "train_step": 2}, path)
    assert layer_statistics.main([str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"== {path}"
    assert [line.split()[0] for line in out[1:]] == ["0.weight", "0.bias"]  # no normaliser, no single value
    assert "kurt nan" in out[2] and "row-norm" in out[1]


def test_a_file_without_a_model_is_refused(tmp_path):
    path = tmp_path / "other.pth"
    torch.save([1, 2, 3], path)
    with pytest.raises(SystemExit, match="neither a checkpoint"):
        layer_statistics.main([str(path)])
