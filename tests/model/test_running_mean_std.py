"""Running mean/std normalisers against numpy statistics (mean, sample variance) over everything seen."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch_paths import needs_private_paths

from sample_factory.model.running_mean_std import RunningMeanStdDictInPlace, RunningMeanStdInPlace

EPSILON = 1e-5


@pytest.mark.parametrize("shape", [(), (3,), (2, 4, 4)])
def test_statistics_match_numpy_over_several_updates(shape: tuple[int, ...]):
    rng = np.random.default_rng(0)
    normalizer = RunningMeanStdInPlace(shape)
    batches = [rng.normal(loc=3.0, scale=2.0, size=(n, *shape)) for n in (1, 7, 30, 5)]
    for batch in batches:
        normalizer(torch.tensor(batch, dtype=torch.float32))
    seen = np.concatenate(batches).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(normalizer.running_mean.numpy(), seen.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(normalizer.running_var.numpy(), seen.var(axis=0, ddof=1), rtol=1e-10)
    assert normalizer.count.item() == len(seen)


def test_leading_dims_all_count_as_batch():
    x = torch.randn(4, 6, 3, dtype=torch.float64)  # [T, B, obs_dim]
    normalizer = RunningMeanStdInPlace((3,))
    normalizer(x.clone())
    torch.testing.assert_close(normalizer.running_mean, x.reshape(-1, 3).mean(0))


def test_normalizes_in_place_with_clipping():
    normalizer = RunningMeanStdInPlace((2,), clip=5.0)
    normalizer(torch.tensor([[0.0, 10.0], [2.0, 30.0]]))  # mean [1, 20], sample variance [2, 200]
    normalizer.eval()
    x = torch.tensor([[3.0, 10.0], [100.0, 20.0]])
    result = normalizer(x)
    assert result is x
    expected = torch.tensor([[2.0 / np.sqrt(2 + EPSILON), -10.0 / np.sqrt(200 + EPSILON)], [5.0, 0.0]])
    torch.testing.assert_close(x, expected.float())
    assert normalizer.count.item() == 2  # eval mode leaves the statistics alone


def test_denormalize_inverts_normalize():
    normalizer = RunningMeanStdInPlace(())
    normalizer(torch.randn(1000) * 4.0 + 10.0)
    normalizer.eval()
    returns = torch.randn(50) * 4.0 + 10.0
    normalized = normalizer(returns.clone())
    assert abs(normalized.mean().item()) < 0.5
    torch.testing.assert_close(normalizer(normalized, denormalize=True), returns)
    assert normalizer.count.item() == 1000


def test_integer_and_grad_tracked_inputs_are_not_overwritten():
    normalizer = RunningMeanStdInPlace((4,))
    pixels = torch.full((2, 4), 200, dtype=torch.uint8)
    result = normalizer(pixels)
    assert result.dtype == torch.float32 and torch.all(pixels == 200)
    values = torch.ones(3, 4, requires_grad=True)
    normalizer.eval()
    normalizer(values, denormalize=True).sum().backward()
    assert values.grad is not None and torch.all(values == 1.0)


def test_statistics_live_in_state_dict_as_float64():
    normalizer = RunningMeanStdInPlace((3,))
    normalizer(torch.randn(10, 3))
    state = normalizer.state_dict()
    assert set(state) == {"running_mean", "running_var", "count"}
    assert all(t.dtype == torch.float64 for t in state.values())
    restored = RunningMeanStdInPlace((3,))
    restored.load_state_dict(state)
    torch.testing.assert_close(restored.running_var, normalizer.running_var)


def _dict_space() -> gym.spaces.Dict:
    return gym.spaces.Dict(
        obs=gym.spaces.Box(-10, 10, (3,)),
        measurements=gym.spaces.Box(-10, 10, (2,)),
        action_mask=gym.spaces.Box(0, 1, (4,)),
        level=gym.spaces.Discrete(5),
    )


def _dict_obs() -> dict[str, torch.Tensor]:
    return dict(
        obs=torch.randn(8, 3) * 3 + 1,
        measurements=torch.randn(8, 2) + 5,
        action_mask=torch.ones(8, 4),
        level=torch.arange(8),
    )


def test_dict_normalizer_defaults_to_box_keys_except_action_mask():
    normalizer = RunningMeanStdDictInPlace(_dict_space())
    obs = _dict_obs()
    raw_obs = {k: v.clone() for k, v in obs.items()}
    result = normalizer(obs)
    assert set(normalizer.running_mean_std.keys()) == {"obs", "measurements"}
    torch.testing.assert_close(normalizer.running_mean_std["obs"].running_mean, raw_obs["obs"].double().mean(0))
    assert abs(result["measurements"].mean().item()) < 1e-4
    torch.testing.assert_close(result["action_mask"], raw_obs["action_mask"])
    torch.testing.assert_close(result["level"], raw_obs["level"])


def test_dict_normalizer_selected_keys_only():
    normalizer = RunningMeanStdDictInPlace(_dict_space(), keys_to_normalize=["measurements"])
    obs = _dict_obs()
    raw = obs["obs"].clone()
    normalizer(obs)
    torch.testing.assert_close(obs["obs"], raw)
    assert "obs" not in normalizer.running_mean_std
    with pytest.raises(ValueError, match="missing_key"):
        RunningMeanStdDictInPlace(_dict_space(), keys_to_normalize=["missing_key"])


def test_per_channel_statistics_pool_each_channel_over_pixels_and_batch():
    rng = np.random.default_rng(1)
    normalizer = RunningMeanStdInPlace((3, 4, 5), per_channel=True)
    # channels with very different scales, so per-element and per-channel statistics differ clearly
    scales = np.array([1.0, 10.0, 100.0]).reshape(1, 3, 1, 1)
    batches = [rng.normal(loc=2.0, size=(n, 3, 4, 5)) * scales for n in (2, 9, 4)]
    for batch in batches[:-1]:
        normalizer(torch.tensor(batch))
    out = normalizer(torch.tensor(batches[-1])).numpy()

    seen = np.concatenate(batches)  # [N, C, H, W]
    mean, var = seen.mean(axis=(0, 2, 3)), seen.var(axis=(0, 2, 3), ddof=1)
    assert normalizer.running_mean.shape == (3, 1, 1)
    np.testing.assert_allclose(normalizer.running_mean.numpy().ravel(), mean, rtol=1e-10)
    np.testing.assert_allclose(normalizer.running_var.numpy().ravel(), var, rtol=1e-10)
    assert normalizer.count.item() == len(seen) * 4 * 5
    expected = (batches[-1] - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + EPSILON)
    np.testing.assert_allclose(out, np.clip(expected, -5.0, 5.0), rtol=1e-6, atol=1e-9)


def test_per_channel_uint8_images():
    rng = np.random.default_rng(2)
    images = rng.integers(0, 256, size=(6, 3, 48, 48), dtype=np.uint8)  # large enough for the float32 path
    normalizer = RunningMeanStdInPlace((3, 48, 48), per_channel=True)
    normalizer(torch.tensor(images))
    as_float = images.astype(np.float64)
    np.testing.assert_allclose(normalizer.running_mean.numpy().ravel(), as_float.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(normalizer.running_var.numpy().ravel(), as_float.var(axis=(0, 2, 3), ddof=1), rtol=1e-5)


def test_norm_only_divides_by_std_without_centering():
    rng = np.random.default_rng(3)
    batch = rng.normal(loc=5.0, scale=2.0, size=(50, 2))
    normalizer = RunningMeanStdInPlace((2,), norm_only=True, clip=100.0)
    out = normalizer(torch.tensor(batch)).numpy()
    np.testing.assert_allclose(out, batch / np.sqrt(batch.var(axis=0, ddof=1) + EPSILON), rtol=1e-10)
    assert out.mean() > 1.0  # the mean of ~5/2 survives: nothing was subtracted
    restored = normalizer(torch.tensor(out), denormalize=True).numpy()
    np.testing.assert_allclose(restored, batch, rtol=1e-10)


def test_per_channel_needs_a_channel_dimension():
    with pytest.raises(ValueError, match="channel dimension"):
        RunningMeanStdInPlace((), per_channel=True)


def _expected(rms: RunningMeanStdInPlace, x: torch.Tensor) -> torch.Tensor:
    mean = rms.running_mean.to(torch.float32)
    std = torch.sqrt(rms.running_var + rms.epsilon).to(torch.float32)
    return ((x - mean) / std).clamp(-rms.clip, rms.clip)


@needs_private_paths
def test_eval_statistics_are_cached_until_they_change():
    """The float32 mean/std are reused between calls and follow every way the statistics change."""
    rms = RunningMeanStdInPlace((3,))
    rms.update(torch.randn(50, 3) * 4 + 2)
    rms.eval()
    x = torch.randn(8, 3) * 3
    assert torch.equal(rms(x.clone()), _expected(rms, x))
    first = rms._cached_mean_std
    rms(x.clone())
    assert rms._cached_mean_std is first  # nothing changed: no recomputation

    rms.update(torch.randn(20, 3) + 10)  # in place, as the learner's train mode does
    assert torch.equal(rms(x.clone()), _expected(rms, x))

    other = RunningMeanStdInPlace((3,))
    other.update(torch.randn(30, 3) - 7)
    rms.load_state_dict(other.state_dict())  # as an inference worker loads new weights
    assert torch.equal(rms(x.clone()), _expected(other, x))

    rms.to(torch.device("cpu"), torch.float64)  # replaced buffers (here float64 -> float64: new objects or not)
    rms.running_mean = torch.full((3,), 5.0, dtype=torch.float64)  # replaced outright
    assert torch.equal(rms(x.clone()), _expected(rms, x))


def test_statistics_cached_in_inference_mode_serve_autograd_afterwards():
    rms = RunningMeanStdInPlace(())
    rms.update(torch.randn(100) * 3)
    rms.eval()
    with torch.inference_mode():
        rms(torch.randn(4))
    values = torch.randn(4, requires_grad=True)
    out = rms(values, denormalize=True)  # multiplies by the cached std, which autograd saves
    out.sum().backward()
    assert torch.allclose(values.grad, torch.sqrt(rms.running_var + rms.epsilon).float().expand(4))


@pytest.mark.parametrize("norm_only", [False, True])
def test_two_samples_normalise_to_unit_sample_std(norm_only: bool):
    """The sample variance is unbiased: even a first batch of two comes out with a sample std of one, not sqrt(2)."""
    normalizer = RunningMeanStdInPlace((3,), norm_only=norm_only)
    batch = torch.tensor([[0.0, 1.0, -3.0], [0.5, 4.0, 1.0]], dtype=torch.float64)
    out = normalizer(batch.clone())
    torch.testing.assert_close(out.std(dim=0), torch.ones(3, dtype=torch.float64), atol=1e-4, rtol=0)


def test_norm_only_does_not_clip():
    """Clipping bounds standardised values; a value that is only rescaled may lie far from zero."""
    normalizer = RunningMeanStdInPlace((), norm_only=True, clip=5.0)
    normalizer(torch.tensor([100.0, 101.0], dtype=torch.float64))  # std ~0.7: values rescale to ~140
    assert normalizer.running_var.item() == pytest.approx(0.5)
    normalizer.eval()
    assert normalizer(torch.tensor([100.0])).item() == pytest.approx(100.0 / np.sqrt(0.5 + EPSILON), rel=1e-6)
    centred = RunningMeanStdInPlace((), clip=5.0)
    centred(torch.tensor([0.0, 1.0]))
    centred.eval()
    assert centred(torch.tensor([100.0])).item() == 5.0


@pytest.mark.parametrize("kwargs", [{}, {"per_channel": True}, {"norm_only": True}])
def test_scripted_normaliser_matches_eager(kwargs: dict):
    """``torch.jit.script`` compiles the module; scripted and eager give the same outputs and statistics."""
    eager, scripted = RunningMeanStdInPlace((2, 3, 3), **kwargs), RunningMeanStdInPlace((2, 3, 3), **kwargs)
    scripted = torch.jit.script(scripted)
    generator = torch.Generator().manual_seed(4)
    for _ in range(3):
        x = torch.rand(5, 2, 3, 3, generator=generator) * 7
        torch.testing.assert_close(scripted(x.clone()), eager(x.clone()))
    torch.testing.assert_close(scripted.running_var, eager.running_var)
    scripted.eval()
    eager.eval()
    y = torch.rand(4, 2, 3, 3, generator=generator)
    torch.testing.assert_close(scripted(y.clone(), denormalize=True), eager(y.clone(), denormalize=True))
