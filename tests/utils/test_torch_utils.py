"""Small torch helpers."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sample_factory.utils.torch_utils import (
    ValidMean,
    calc_num_elements,
    init_torch_runtime,
    masked_mean,
    masked_select,
    synchronize,
    to_scalar,
)


def test_calc_num_elements_of_a_conv_stack():
    conv = nn.Sequential(nn.Conv2d(3, 8, kernel_size=4, stride=2), nn.ReLU(), nn.Conv2d(8, 16, kernel_size=3))
    assert calc_num_elements(conv, (3, 32, 32)) == 16 * 13 * 13


def test_to_scalar():
    assert to_scalar(torch.tensor(2.5)) == 2.5 and isinstance(to_scalar(torch.tensor(3)), int)
    assert to_scalar(np.float32(1.5)) == 1.5 and isinstance(to_scalar(np.array([7])), int)
    assert to_scalar(4) == 4


def test_init_torch_runtime_sets_threads():
    previous = torch.get_num_threads()
    try:
        init_torch_runtime(None, max_num_threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(previous)


def test_masked_helpers():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0])
    mask = torch.tensor([True, False, True, False])
    assert masked_select(x, mask).tolist() == [1.0, 3.0]
    assert masked_select(x, mask, num_invalids=0) is x
    assert masked_mean(x, mask).item() == 2.0
    assert masked_mean(x, torch.zeros(4, dtype=torch.bool)).item() == 0.0
    assert ValidMean(mask)(x).item() == 2.0 and ValidMean(mask)(x * 2).item() == 4.0


def test_synchronize_is_a_no_op_on_cpu():
    synchronize(None, torch.device("cpu"))
    synchronize(None, "cpu")


def test_calc_num_elements_takes_sample_factory_2_keywords():
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    assert calc_num_elements(module=mlp, module_input_shape=(3, 4)) == 5
