"""torch's private paths and their public fallbacks give the same results; the fallbacks are taken with
``SF_DISABLE_FAST_PATHS=all`` or on a torch outside ``VERIFIED_TORCH``."""

from __future__ import annotations

import pytest
import torch
from gymnasium import spaces
from torch_paths import PRIVATE_PATHS, needs_cpu_fused_adam

from sample_factory.algo.learning.optimizers import LeanAdamStep, clip_grad_norm
from sample_factory.compat import torch_internals
from sample_factory.model.running_mean_std import RunningMeanStdInPlace


@pytest.fixture(params=["private", "public"])
def path(request, monkeypatch):
    if request.param == "public":
        monkeypatch.setattr(torch_internals, "VERIFIED_TORCH", ((1, 0),))
    elif not PRIVATE_PATHS:
        pytest.skip(f"torch {torch.__version__} is not a verified version: only the public path is taken here")
    torch_internals.recheck()
    yield request.param
    monkeypatch.undo()
    torch_internals.recheck()


def test_the_switch_and_the_version_decide(monkeypatch, caplog):
    # on a verified torch the private paths are taken, elsewhere the public ones, said in one line
    assert torch_internals.recheck() is PRIVATE_PATHS
    said = [r.getMessage() for r in caplog.records if "torch's private paths are off" in r.getMessage()]
    assert said == (
        []
        if PRIVATE_PATHS
        else [
            f"torch's private paths are off (torch {torch.__version__} is not a "
            f"version they were verified on (2.13)): public torch APIs only"
        ]
    )
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "all")
    assert torch_internals.recheck() is False
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "torch_internals")
    assert torch_internals.recheck() is False
    monkeypatch.delenv("SF_DISABLE_FAST_PATHS")
    monkeypatch.setattr(torch_internals, "VERIFIED_TORCH", ((1, 0),))
    assert torch_internals.recheck() is False
    monkeypatch.undo()
    assert torch_internals.recheck() is PRIVATE_PATHS


def test_gradient_clipping_is_the_same_on_both_paths(path):
    torch.manual_seed(0)
    grads = [torch.randn(5, 3), torch.randn(7)]
    expected = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads]))
    clipped = [g.clone() for g in grads]
    norm = clip_grad_norm(clipped, 1.0)
    torch.testing.assert_close(norm, expected)
    assert torch.linalg.vector_norm(torch.cat([g.flatten() for g in clipped])).item() == pytest.approx(1.0, rel=1e-4)


@needs_cpu_fused_adam
def test_lean_adam_matches_torch_adam_on_both_paths(path):
    torch.manual_seed(1)
    models = [torch.nn.Linear(4, 3) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    reference = torch.optim.Adam(models[0].parameters(), lr=0.01, fused=True)
    lean_optimizer = torch.optim.Adam(models[1].parameters(), lr=0.01, fused=True)
    lean = LeanAdamStep(lean_optimizer)
    x = torch.randn(8, 4)
    for _ in range(3):
        for model, step in ((models[0], reference.step), (models[1], lean)):
            model.zero_grad()
            model(x).square().sum().backward()
            step()
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_the_normaliser_sees_in_place_updates_on_both_paths(path):
    normaliser = RunningMeanStdInPlace((2,))
    x = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    before = normaliser(x.clone())
    normaliser.train()
    normaliser.update(torch.tensor([[10.0, 20.0], [30.0, 60.0]]))  # the statistics change in place
    normaliser.eval()
    after = normaliser(x.clone())
    assert not torch.allclose(before, after)


def test_hook_readers_are_conservative_on_the_public_path(path):
    module = torch.nn.Linear(2, 2)
    if path == "private":
        assert torch_internals.module_hook_kinds(module) == [] and not torch_internals.is_compiled_module(module)
        module.register_forward_hook(lambda *args: None)
        assert torch_internals.module_hook_kinds(module) == ["forward hook"]
    else:
        assert torch_internals.module_hook_kinds(module) and torch_internals.is_compiled_module(module)
        assert torch_internals.global_module_hooks() and torch_internals.tensor_version(torch.zeros(1)) is None
        assert torch_internals.adam_init_group(torch.optim.Adam(module.parameters()), {}) is False
    assert spaces  # the space module is imported by the normaliser's users; keeps the import honest
