"""TensorDict writes (numpy included) and cat_tensordicts joining TensorDicts along dim 0, leaf by leaf."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sample_factory.utils.tensor_dict import TensorDict, cat_tensordicts, copy_slots


def _td(start: int, n: int) -> TensorDict:
    values = torch.arange(start, start + n)
    return TensorDict(
        {"rewards": values.float(), "obs": {"img": values.reshape(n, 1, 1).expand(n, 2, 2).clone(), "vec": values}}
    )


def test_leaves_concatenated_in_order_nested_too():
    out = cat_tensordicts([_td(0, 2), _td(10, 3)])
    assert isinstance(out, TensorDict) and isinstance(out["obs"], TensorDict)
    assert out.rewards.tolist() == [0.0, 1.0, 10.0, 11.0, 12.0]
    assert out["obs"]["vec"].tolist() == [0, 1, 10, 11, 12]
    assert out["obs"]["img"].shape == (5, 2, 2) and out["obs"]["img"][3].unique().tolist() == [11]


def test_different_keys_are_an_error_naming_them():
    other = _td(0, 1)
    del other["obs"]["vec"]
    with pytest.raises(KeyError, match="under 'obs'"):
        cat_tensordicts([_td(0, 1), other])


def test_dict_versus_tensor_is_an_error():
    other = _td(0, 1)
    other["obs"] = torch.zeros(1)
    with pytest.raises(TypeError, match="'obs' is a dict in some"):
        cat_tensordicts([_td(0, 1), other])


def test_empty_list_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        cat_tensordicts([])


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


def test_numpy_arrays_are_written_into_tensor_leaves_in_place():
    buffer = TensorDict(rewards=torch.zeros(4, 3), obs=TensorDict(pos=torch.zeros(4, 3, 2)))
    odd_rows = buffer[1::2]
    odd_rows[:] = {"rewards": np.arange(6).reshape(2, 3), "obs": {"pos": np.ones((2, 3, 2), dtype=np.float64)}}
    assert buffer["rewards"].dtype == torch.float32  # the buffer keeps its dtype; the int64 values are cast
    assert buffer["rewards"][3].tolist() == [3.0, 4.0, 5.0] and buffer["rewards"][0].tolist() == [0.0, 0.0, 0.0]
    assert buffer["obs"]["pos"][1].sum().item() == 6.0 and buffer["obs"]["pos"][2].sum().item() == 0.0
    buffer[:, 0] = np.array(7.0)  # one array written into every leaf (broadcast)
    assert buffer["rewards"][:, 0].tolist() == [7.0] * 4 and buffer["obs"]["pos"][:, 0].unique().tolist() == [7.0]


def test_numpy_leaves_are_concatenated_as_numpy():
    first = TensorDict(a=np.zeros((2, 3)), nested=TensorDict(b=np.arange(2)))
    second = TensorDict(a=np.ones((1, 3)), nested=TensorDict(b=np.arange(5, 6)))
    out = cat_tensordicts([first, second])
    assert isinstance(out["a"], np.ndarray) and out["a"].shape == (3, 3) and out["a"][2].tolist() == [1.0] * 3
    assert out["nested"]["b"].tolist() == [0, 1, 5]


def test_numpy_and_tensor_leaves_do_not_mix():
    with pytest.raises(TypeError, match="'a' is a numpy array in some"):
        cat_tensordicts([TensorDict(a=np.zeros(2)), TensorDict(a=torch.zeros(2))])
