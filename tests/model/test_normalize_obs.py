from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.running_mean_std import ObsNormalizer, RunningMeanStdDictInPlace, RunningMeanStdInPlace

IMAGE = gym.spaces.Box(0, 255, (3, 36, 36), dtype=np.uint8)
VECTOR = gym.spaces.Box(-10.0, 10.0, (5,), dtype=np.float32)
DICT_SPACE = gym.spaces.Dict({"image": IMAGE, "vector": VECTOR})
DISCRETE = gym.spaces.Discrete(3)


def _obs(batch: int = 8) -> dict[str, torch.Tensor]:
    return {
        "image": torch.randint(0, 256, (batch, 3, 36, 36), dtype=torch.uint8),
        "vector": torch.randn(batch, 5) * 3 + 2,
    }


def test_normalizers_follow_flags(make_cfg):
    model = create_actor_critic(make_cfg(), DICT_SPACE, DISCRETE)
    assert isinstance(model.obs_normalizer, ObsNormalizer)
    assert isinstance(model.obs_normalizer.running_mean_std, RunningMeanStdDictInPlace)
    assert isinstance(model.returns_normalizer, RunningMeanStdInPlace)
    model = create_actor_critic(make_cfg(normalize_input=False, normalize_returns=False), DICT_SPACE, DISCRETE)
    assert model.obs_normalizer is None and model.returns_normalizer is None


def test_stats_update_in_train_mode_only(make_cfg):
    model = create_actor_critic(make_cfg(), DICT_SPACE, DISCRETE)
    stats = model.obs_normalizer.running_mean_std["vector"]

    model.eval()
    model.normalize_obs(_obs())
    assert stats.count.item() == 0

    model.train()
    obs = _obs()
    model.normalize_obs(obs)
    assert stats.count.item() == 8
    torch.testing.assert_close(stats.running_mean.float(), obs["vector"].mean(dim=0))


def test_inputs_are_not_modified_and_outputs_are_normalised(make_cfg):
    model = create_actor_critic(make_cfg(), DICT_SPACE, DISCRETE)
    obs = _obs(64)
    before = {k: v.clone() for k, v in obs.items()}
    normalized = model.normalize_obs(obs)
    for key in obs:
        assert torch.equal(obs[key], before[key])
        assert normalized[key].dtype == torch.float32
    # after one update from this very batch, the batch itself is standardised
    torch.testing.assert_close(normalized["vector"].mean(dim=0), torch.zeros(5), atol=1e-4, rtol=0)
    torch.testing.assert_close(normalized["vector"].std(dim=0), torch.ones(5), atol=1e-3, rtol=0)  # sample std


def test_subtract_mean_and_scale_without_running_stats(make_cfg):
    cfg = make_cfg(normalize_input=False, obs_subtract_mean=128.0, obs_scale=255.0)
    model = create_actor_critic(cfg, IMAGE, DISCRETE)
    image = torch.randint(0, 256, (2, 3, 36, 36), dtype=torch.uint8)
    normalized = model.normalize_obs({"obs": image})
    torch.testing.assert_close(normalized["obs"], (image.float() - 128.0) / 255.0)


def test_float_input_is_copied_before_in_place_normalisation(make_cfg):
    model = create_actor_critic(make_cfg(), VECTOR, DISCRETE)
    x = torch.randn(4, 5)
    x_before = x.clone()
    normalized = model.normalize_obs({"obs": x})
    assert torch.equal(x, x_before) and normalized["obs"].data_ptr() != x.data_ptr()


def test_normalize_input_keys_selects_keys(make_cfg):
    model = create_actor_critic(make_cfg(normalize_input_keys=["vector"]), DICT_SPACE, DISCRETE)
    assert list(model.obs_normalizer.running_mean_std.keys()) == ["vector"]
    obs = _obs()
    normalized = model.normalize_obs(obs)
    torch.testing.assert_close(normalized["image"], obs["image"].float())  # only cast


def test_subtract_mean_and_scale_apply_to_image_keys_only(make_cfg):
    # --obs_scale=255 describes pixels: a measurements vector next to the screen must keep its own scale
    cfg = make_cfg(normalize_input=False, obs_subtract_mean=128.0, obs_scale=255.0)
    model = create_actor_critic(cfg, DICT_SPACE, DISCRETE)
    obs = _obs()
    normalized = model.normalize_obs(obs)
    torch.testing.assert_close(normalized["image"], (obs["image"].float() - 128.0) / 255.0)
    torch.testing.assert_close(normalized["vector"], obs["vector"].float())


def test_image_batch_moments_match_float64_reference():
    # images take the float32 two-pass path: it must agree with exact float64 statistics and leave the input alone
    normalizer = RunningMeanStdInPlace((3, 36, 36))
    pixels = torch.randint(0, 256, (64, 3, 36, 36), dtype=torch.uint8)
    for batch in (pixels, pixels.float() / 255.0):
        before = batch.clone()
        normalizer = RunningMeanStdInPlace((3, 36, 36))
        normalizer.update(batch[:40])
        normalizer.update(batch[40:])
        assert torch.equal(batch, before)
        reference_var, reference_mean = torch.var_mean(batch.double(), dim=0, correction=1)
        torch.testing.assert_close(normalizer.running_mean, reference_mean, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(normalizer.running_var, reference_var, rtol=1e-5, atol=1e-7)
