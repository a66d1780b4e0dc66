"""ObsNormalizer's nesting, RunningMeanStdDictInPlace read as a dict, and renaming an older state dict's keys."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from sample_factory.model.encoder import rename_legacy_keys
from sample_factory.model.running_mean_std import ObsNormalizer, RunningMeanStdInPlace

SPACE = gym.spaces.Dict(
    {"action_mask": gym.spaces.Box(0, 1, (3,)), "pos": gym.spaces.Box(-5.0, 5.0, (2,), dtype=np.float32)}
)


def test_obs_normalizer_nests_the_dict_normaliser_and_normalises_like_it():
    normalizer = ObsNormalizer(SPACE)
    assert sorted(normalizer.state_dict()) == [
        "running_mean_std.running_mean_std.pos.count",
        "running_mean_std.running_mean_std.pos.running_mean",
        "running_mean_std.running_mean_std.pos.running_var",
    ]
    per_key = normalizer.running_mean_std
    assert list(per_key.keys()) == ["pos"] and "pos" in per_key and "action_mask" not in per_key
    assert isinstance(per_key["pos"], RunningMeanStdInPlace) and dict(per_key.items()) == {"pos": per_key["pos"]}
    batch = {"pos": torch.tensor([[1.0, 2.0], [3.0, 6.0]]), "action_mask": torch.ones(2, 3)}
    out = normalizer.train()(dict(batch))
    assert torch.equal(out["action_mask"], batch["action_mask"])  # not a normalised key
    torch.testing.assert_close(per_key["pos"].running_mean, torch.tensor([2.0, 4.0], dtype=torch.float64))
    assert float(per_key["pos"].count) == 2.0


def test_obs_normalizer_loads_the_older_flat_layout_and_its_0_dim_count():
    normalizer = ObsNormalizer(SPACE)
    old = {
        "running_mean_std.pos.running_mean": torch.tensor([1.0, -1.0], dtype=torch.float64),
        "running_mean_std.pos.running_var": torch.tensor([4.0, 9.0], dtype=torch.float64),
        "running_mean_std.pos.count": torch.tensor(7.0, dtype=torch.float64),
    }
    normalizer.load_state_dict(old)
    stats = normalizer.running_mean_std["pos"]
    assert torch.equal(stats.running_var, old["running_mean_std.pos.running_var"])
    assert stats.count.shape == (1,) and float(stats.count) == 7.0


def test_rename_legacy_keys_renames_under_the_prefix_only_when_the_new_form_is_absent():
    old = {"m.conv_head.0.weight": 1, "m.mlp_layers.0.bias": 2, "other.conv_head.0.weight": 3}
    rename_legacy_keys(old, "m.", {"conv_head.": "enc.conv_head.", "mlp_layers.": "enc.mlp_layers."})
    assert old == {"m.enc.conv_head.0.weight": 1, "m.enc.mlp_layers.0.bias": 2, "other.conv_head.0.weight": 3}
    current = {"m.enc.conv_head.0.weight": 1, "m.conv_head.extra": 2}
    rename_legacy_keys(current, "m.", {"conv_head.": "enc.conv_head."})
    assert current == {"m.enc.conv_head.0.weight": 1, "m.conv_head.extra": 2}
