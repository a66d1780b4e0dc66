"""Block-wise normalisation of integer image batches gives bitwise what the step-by-step path gives, and is used
only where it can: the library's own normalisers in train mode, integer pixels on the CPU."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.model import running_mean_std
from sample_factory.model.actor_critic import ActorCritic, create_actor_critic
from sample_factory.model.running_mean_std import (
    RunningMeanStdInPlace,
    normalize_pixels_blockwise,
    normalizes_blockwise,
)

DOOM = (3, 72, 128)
DISCRETE = gym.spaces.Discrete(3)


def _pixels(batch: int, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    pixels = torch.randint(0, 256, (batch, *shape), dtype=torch.uint8, generator=generator)
    pixels[:, :, :5] = 17  # constant pixels: zero batch variance
    return pixels


def _step_by_step(normalizer: RunningMeanStdInPlace, pixels: torch.Tensor, subtract: float, scale: float):
    """What ``ActorCritic.normalize_obs`` did before the block-wise path: preprocess, then the module's forward."""
    values = pixels.float()
    if subtract != 0.0:
        values.sub_(subtract)
    if scale != 1.0:
        values.div_(scale)
    return normalizer(values)


@pytest.mark.parametrize("batch", [1, 2, 37, 512])
@pytest.mark.parametrize(("subtract", "scale"), [(0.0, 255.0), (0.0, 1.0), (128.0, 64.0)])
def test_blockwise_results_and_statistics_are_bitwise_those_of_the_step_by_step_path(batch, subtract, scale):
    plain, blockwise = RunningMeanStdInPlace(DOOM), RunningMeanStdInPlace(DOOM)
    for seed in range(3):  # the count and the statistics move between batches
        pixels = _pixels(batch, DOOM, seed)
        before = pixels.clone()
        expected = _step_by_step(plain, pixels, subtract, scale)
        result = normalize_pixels_blockwise(blockwise, pixels, subtract, scale)
        assert torch.equal(pixels, before)
        assert result.dtype == torch.float32 and result.shape == pixels.shape and result.is_contiguous()
        assert torch.equal(result, expected)
        for name in ("running_mean", "running_var", "count"):
            assert torch.equal(getattr(blockwise, name), getattr(plain, name)), name


def test_blocks_of_an_odd_sized_sample_with_an_uneven_last_block(monkeypatch):
    monkeypatch.setattr(running_mean_std, "BLOCK_BYTES", 4 * 8 * 100)  # 8 samples: blocks of 64 pixel positions
    shape = (3, 37, 41)  # 4551 positions: 71 blocks of 64 and one of 7
    plain, blockwise = RunningMeanStdInPlace(shape), RunningMeanStdInPlace(shape)
    pixels = _pixels(8, shape, seed=5)
    assert normalizes_blockwise(blockwise, pixels)
    assert torch.equal(normalize_pixels_blockwise(blockwise, pixels, 0.0, 255.0), _step_by_step(plain, pixels, 0, 255))
    assert torch.equal(blockwise.running_var, plain.running_var)


def test_the_cached_mean_and_std_follow_the_blockwise_update():
    normalizer = RunningMeanStdInPlace(DOOM)
    normalizer.eval()
    normalizer(_pixels(4, DOOM, 0).float())  # fills the cache with the initial statistics
    normalizer.train()
    normalize_pixels_blockwise(normalizer, _pixels(16, DOOM, 1), 0.0, 255.0)
    normalizer.eval()
    mean, std = normalizer._mean_std(torch.float32)
    assert torch.equal(mean, normalizer.running_mean.float())
    assert torch.equal(std, torch.sqrt(normalizer.running_var + normalizer.epsilon).float())


def test_only_integer_cpu_batches_of_large_samples_for_per_element_statistics_in_train_mode():
    normalizer = RunningMeanStdInPlace(DOOM)
    pixels = _pixels(4, DOOM, 0)
    assert normalizes_blockwise(normalizer, pixels)
    assert not normalizes_blockwise(normalizer, pixels.float())  # float input: normalised in place already
    assert not normalizes_blockwise(normalizer, pixels[:0])
    assert not normalizes_blockwise(RunningMeanStdInPlace((3, 8, 8)), _pixels(4, (3, 8, 8), 0))  # float64 moments
    assert not normalizes_blockwise(RunningMeanStdInPlace(DOOM, per_channel=True), pixels)
    assert not normalizes_blockwise(RunningMeanStdInPlace(DOOM, norm_only=True), pixels)
    assert not normalizes_blockwise(RunningMeanStdInPlace((3, 128, 72)), pixels)

    class Subclass(RunningMeanStdInPlace):
        pass

    assert not normalizes_blockwise(Subclass(DOOM), pixels)
    normalizer.eval()
    assert not normalizes_blockwise(normalizer, pixels)


def _model(make_cfg, space: gym.Space, model_class: type | None = None, **flags) -> ActorCritic:
    model = create_actor_critic(make_cfg(obs_scale=255.0, **flags), space, DISCRETE)
    if model_class is not None:
        model.__class__ = model_class
    return model


def _spy_blockwise(monkeypatch) -> list[int]:
    calls = []
    real = running_mean_std.normalize_pixels_blockwise

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("sample_factory.model.actor_critic.normalize_pixels_blockwise", spy)
    return calls


def test_normalize_obs_of_a_dict_batch_equals_the_step_by_step_path(make_cfg, monkeypatch):
    space = gym.spaces.Dict(
        {
            "image": gym.spaces.Box(0, 255, (3, 48, 64), dtype=np.uint8),
            "vector": gym.spaces.Box(-10.0, 10.0, (5,), dtype=np.float32),
            "action_mask": gym.spaces.Box(0, 1, (3,), dtype=np.uint8),
        }
    )
    model = _model(make_cfg, space, obs_subtract_mean=3.0)
    model.train()
    reference = copy.deepcopy(model)
    calls = _spy_blockwise(monkeypatch)
    for seed in range(2):
        generator = torch.Generator().manual_seed(seed)
        obs = {
            "image": torch.randint(0, 256, (32, 3, 48, 64), dtype=torch.uint8, generator=generator),
            "vector": torch.randn(32, 5, generator=generator),
            "action_mask": torch.ones(32, 3, dtype=torch.uint8),
        }
        result = model.normalize_obs(obs)
        expected = {key: reference._preprocess_obs(key, x, key != "action_mask") for key, x in obs.items()}
        reference.obs_normalizer(expected)
        assert result.keys() == obs.keys() and result["action_mask"] is obs["action_mask"]
        for key in ("image", "vector"):
            assert torch.equal(result[key], expected[key]), key
    assert len(calls) == 2  # the image key only
    for key in ("image", "vector"):
        ours, theirs = model.obs_normalizer.running_mean_std[key], reference.obs_normalizer.running_mean_std[key]
        assert torch.equal(ours.running_var, theirs.running_var) and torch.equal(ours.count, theirs.count)


def test_eval_mode_float_pixels_and_user_preprocessing_take_the_step_by_step_path(make_cfg, monkeypatch):
    space = gym.spaces.Box(0, 255, DOOM, dtype=np.uint8)
    calls = _spy_blockwise(monkeypatch)
    model = _model(make_cfg, space)
    model.eval()
    model.normalize_obs({"obs": _pixels(4, DOOM, 0)})
    model.train()
    model.normalize_obs({"obs": _pixels(4, DOOM, 0).float()})
    assert not calls

    class UserPreprocessing(type(model)):
        def _preprocess_obs(self, key, x, needs_copy):
            return super()._preprocess_obs(key, x, needs_copy) * 2.0

    model = _model(make_cfg, space, UserPreprocessing)
    model.train()
    model.normalize_obs({"obs": _pixels(4, DOOM, 0)})
    assert not calls
    model = _model(make_cfg, space)
    model.train()
    model.normalize_obs({"obs": _pixels(4, DOOM, 0)})
    assert calls == [1]
