"""Sample Factory 2's small helpers at its ``algo.utils`` paths: tensors and arrays alike, tensor dicts, locks,
signal names, dtype conversion, legacy-gym patching."""

from __future__ import annotations

import logging
import multiprocessing

import numpy as np
import pytest
import torch

from sample_factory.algo.utils.gymnasium_utils import patch_non_gymnasium_env
from sample_factory.algo.utils.misc import advance_rollouts_signal, new_trajectories_signal
from sample_factory.algo.utils.multiprocessing_utils import FakeLock, get_lock
from sample_factory.algo.utils.tensor_dict import (
    TensorDict,
    clone_tensordict,
    find_invalid_data,
    shallow_recursive_copy,
    tensor_dict_to_numpy,
    to_numpy,
)
from sample_factory.algo.utils.tensor_utils import (
    cat_tensors,
    clone_tensor,
    dict_of_lists_cat,
    ensure_numpy_array,
    ensure_torch_tensor,
    unsqueeze_tensor,
)
from sample_factory.algo.utils.torch_utils import inference_context, masked_select, to_torch_dtype


def test_tensor_utils_treat_tensors_and_arrays_alike() -> None:
    assert cat_tensors([torch.ones(1, 2), torch.zeros(2, 2)]).tolist() == [[1, 1], [0, 0], [0, 0]]
    assert isinstance(cat_tensors([np.ones(2), np.zeros(1)]), np.ndarray)
    assert dict_of_lists_cat({"a": [np.ones(1), np.zeros(1)]})["a"].tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="empty"):
        cat_tensors([])
    t, a = torch.ones(2), np.ones(2)
    ct, ca = clone_tensor(t), clone_tensor(a)
    ct[0], ca[0] = 5, 5
    assert t[0] == 1 and a[0] == 1
    shared = ensure_numpy_array(t)
    shared[1] = 7
    assert t[1] == 7, "a CPU tensor's array shares its memory"
    assert ensure_torch_tensor(a).data_ptr() == torch.from_numpy(a).data_ptr()
    assert ensure_torch_tensor([1, 2]).tolist() == [1, 2]
    assert unsqueeze_tensor(t, 0).shape == (1, 2) and unsqueeze_tensor(a, 1).shape == (2, 1)


def test_tensor_dict_copies_and_conversion() -> None:
    d = TensorDict(obs=TensorDict(obs=torch.zeros(2, 3)), rewards=torch.ones(2))
    deep = clone_tensordict(d)
    deep["obs"]["obs"][0, 0] = 9.0
    assert d["obs"]["obs"][0, 0] == 0.0
    shallow = shallow_recursive_copy(d)
    shallow["rewards"] = torch.zeros(2)
    shallow["obs"]["obs"][1, 1] = 4.0
    assert d["rewards"].tolist() == [1.0, 1.0] and d["obs"]["obs"][1, 1] == 4.0
    as_numpy = tensor_dict_to_numpy(d)
    assert isinstance(as_numpy["obs"]["obs"], np.ndarray) and as_numpy["obs"]["obs"][1, 1] == 4.0
    assert to_numpy(torch.arange(3)).tolist() == [0, 1, 2]


def test_find_invalid_data_names_the_leaf(caplog: pytest.LogCaptureFixture) -> None:
    d = TensorDict(obs=TensorDict(obs=torch.tensor([1.0, float("nan")])), values=torch.ones(2), a=np.arange(2))
    assert not find_invalid_data(TensorDict(values=torch.ones(2)))
    with caplog.at_level(logging.WARNING):
        assert find_invalid_data(d, msg="after step")
    assert "after step: 1 NaN/inf value(s) in obs.obs" in caplog.text
    assert not find_invalid_data(d, keys=["values"])
    assert find_invalid_data(d, keys=["obs"])


def test_locks() -> None:
    lock = get_lock(serial=True)
    assert isinstance(lock, FakeLock)
    with lock:
        assert lock.acquire() is True  # never blocks, even when "held"
    real = get_lock(serial=False, mp_ctx=multiprocessing.get_context("spawn"))
    assert real.acquire(timeout=1) and not real.acquire(block=False)
    real.release()
    assert not isinstance(get_lock(serial=False), FakeLock)


def test_signal_names_differ_per_worker_and_policy() -> None:
    assert advance_rollouts_signal(3) == "advance3" and advance_rollouts_signal(3) != advance_rollouts_signal(4)
    assert new_trajectories_signal(1) == "p1_trajectories"


def test_torch_helpers() -> None:
    assert to_torch_dtype(np.float32) == torch.float32 and to_torch_dtype("uint8") == torch.uint8
    assert to_torch_dtype(bool) == torch.bool
    with pytest.raises(TypeError, match="no torch equivalent"):
        to_torch_dtype(object)
    x, mask = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([True, False, True])
    assert masked_select(x, mask).tolist() == [1.0, 3.0]
    assert masked_select(x, torch.ones(3, dtype=torch.bool), num_non_mask=0) is x
    with inference_context(is_serial=False):
        assert torch.is_inference_mode_enabled()
    with inference_context(is_serial=True):
        assert not torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_patch_non_gymnasium_env_converts_spaces_in_place() -> None:
    import gymnasium as gym

    class LegacyBox:  # a legacy gym space is recognised by its class name and attributes
        def __init__(self) -> None:
            self.low, self.high = np.zeros(2, np.float32), np.ones(2, np.float32)
            self.shape, self.dtype = (2,), np.float32

    LegacyBox.__name__ = "Box"

    class LegacyEnv:
        observation_space = LegacyBox()
        action_space = gym.spaces.Discrete(3)

    env = LegacyEnv()
    assert patch_non_gymnasium_env(env) is env
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.shape == (2,)
    assert env.action_space == gym.spaces.Discrete(3) and env.render_mode is None
