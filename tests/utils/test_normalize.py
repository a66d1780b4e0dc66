"""``ObservationNormalizer(obs_space, cfg)``: image scaling per ``--obs_subtract_mean``/``--obs_scale``, running
mean/std normalisation per ``--normalize_input`` and ``--normalize_input_keys``, updates only in train mode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.normalize import ObservationNormalizer

SPACE = gym.spaces.Dict(
    {
        "obs": gym.spaces.Box(0, 255, (3, 4, 4), np.uint8),
        "measurements": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "action_mask": gym.spaces.Box(0, 1, (3,), np.int8),
    }
)


def _cfg(normalize_input: bool, keys: list[str] | None = None, sub: float = 0.0, scale: float = 1.0) -> AttrDict:
    return AttrDict(normalize_input=normalize_input, normalize_input_keys=keys, obs_subtract_mean=sub, obs_scale=scale)


def _batch(n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randint(0, 256, (n, 3, 4, 4), generator=g, dtype=torch.uint8),
        "measurements": torch.randn(n, 2, generator=g) * 3 + 10,
        "action_mask": torch.tensor([[1, 0, 1]] * n, dtype=torch.int8),
    }


def test_scaling_only_touches_images() -> None:
    normalizer = ObservationNormalizer(SPACE, _cfg(False, sub=128.0, scale=64.0))
    batch = _batch(5, 0)
    out = normalizer(batch)
    assert torch.allclose(out["obs"], (batch["obs"].float() - 128.0) / 64.0)
    assert torch.equal(out["measurements"], batch["measurements"])
    assert out["action_mask"] is batch["action_mask"]


def test_running_statistics_of_everything_seen_and_inputs_untouched() -> None:
    normalizer = ObservationNormalizer(SPACE, _cfg(True, scale=255.0))
    batches = [_batch(n, seed) for seed, n in enumerate((7, 1, 12))]
    copies = [{k: v.clone() for k, v in b.items()} for b in batches]
    for batch in batches:
        out = normalizer(batch)
    for batch, copy in zip(batches, copies, strict=True):
        assert all(torch.equal(batch[k], copy[k]) for k in batch)
    seen = np.concatenate([b["measurements"].numpy().astype(np.float64) for b in batches])
    stats = normalizer.running_mean_std["measurements"]
    assert np.allclose(stats.running_mean.numpy(), seen.mean(0)) and np.allclose(
        stats.running_var.numpy(), seen.var(0, ddof=1)
    )
    expected = np.clip(
        (batches[-1]["measurements"].numpy() - seen.mean(0)) / np.sqrt(seen.var(0, ddof=1) + 1e-5), -5, 5
    )
    assert np.allclose(out["measurements"].numpy(), expected, atol=1e-5)
    pixels = np.concatenate([b["obs"].numpy() / 255.0 for b in batches])
    assert np.allclose(normalizer.running_mean_std["obs"].running_mean.numpy(), pixels.mean(0))
    assert "action_mask" not in normalizer.running_mean_std and torch.equal(
        out["action_mask"], batches[-1]["action_mask"]
    )


def test_eval_mode_applies_without_updating_and_keys_can_be_chosen() -> None:
    normalizer = ObservationNormalizer(SPACE, _cfg(True, keys=["measurements"]))
    assert list(normalizer.running_mean_std) == ["measurements"]
    normalizer(_batch(8, 1))
    state = {k: v.clone() for k, v in normalizer.state_dict().items()}
    normalizer.eval()
    out = normalizer(_batch(8, 2))
    assert all(torch.equal(state[k], v) for k, v in normalizer.state_dict().items())
    assert out["obs"].dtype == torch.float32 and out["obs"].max() > 1.0  # not normalised: not a chosen key


def test_a_plain_space_is_the_obs_key() -> None:
    normalizer = ObservationNormalizer(gym.spaces.Box(-1, 1, (3,)), _cfg(True))
    out = normalizer(torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    assert list(out) == ["obs"] and torch.allclose(out["obs"][:, 1], torch.zeros(2))


def test_bad_configuration_names_the_flag() -> None:
    with pytest.raises(ValueError, match="--normalize_input_keys names \\['rgb'\\]"):
        ObservationNormalizer(SPACE, _cfg(True, keys=["rgb"]))
    with pytest.raises(ValueError, match="--obs_scale=0"):
        ObservationNormalizer(SPACE, _cfg(False, scale=0.0))
