"""TensorDict helpers that move trajectories out of the shared slot buffers."""

from __future__ import annotations

import torch

from sample_factory.algo.utils.tensor_dict import TensorDict, copy_slots


def test_copy_slots_gathers_rows_of_every_nested_leaf_in_place():
    src = TensorDict(obs=TensorDict(obs=torch.arange(5.0)[:, None].repeat(1, 3)), rewards=torch.arange(5.0) * 10)
    dst = TensorDict(obs=TensorDict(obs=torch.zeros(2, 3)), rewards=torch.zeros(2))
    target = dst["obs"]["obs"]
    copy_slots(src, torch.tensor([4, 1]), dst)
    assert dst["obs"]["obs"] is target  # written into the existing tensors
    assert dst["obs"]["obs"][:, 0].tolist() == [4.0, 1.0]
    assert dst["rewards"].tolist() == [40.0, 10.0]
    src["rewards"][4] = -1.0  # the copy does not alias the source slots
    assert dst["rewards"][0] == 40.0
