"""``RunningMeanStdDictInPlace(obs_space, keys, epsilon, clip, per_channel, norm_only)``: Sample Factory 2's
parameters, passed to every key's normaliser."""

from __future__ import annotations

import torch
from gymnasium import spaces

from sample_factory.algo.utils.running_mean_std import RunningMeanStdDictInPlace


def test_per_channel_statistics_and_rescaling_only_reach_every_key():
    space = spaces.Dict({"img": spaces.Box(0, 1, (2, 3, 3)), "vec": spaces.Box(-1, 1, (2, 4))})
    normaliser = RunningMeanStdDictInPlace(space, None, 1e-5, 5.0, True, True)
    assert normaliser["img"].running_mean.shape == (2, 1, 1) and normaliser["vec"].running_mean.shape == (2, 1)
    normaliser.train()
    batch = {"img": torch.rand(8, 2, 3, 3) * 10 + 3, "vec": torch.rand(8, 2, 4)}
    normaliser({k: v.clone() for k, v in batch.items()})
    normaliser.eval()
    out = normaliser({k: v.clone() for k, v in batch.items()})
    std = normaliser["img"].running_var.sqrt().float()
    torch.testing.assert_close(out["img"], batch["img"] / torch.sqrt(std**2 + 1e-5), rtol=1e-4, atol=1e-4)
