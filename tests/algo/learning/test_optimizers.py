"""LAMB: convergence on a quadratic and the layer-wise trust ratio of a single step. The lean gradient clipping and
Adam step: the same numbers as torch's own, and the normal path wherever the lean one does not apply. FlatAdam: the
same training as torch's clip + Adam, the optimiser's state_dict kept per parameter, and a safe way out."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import types

import pytest
import torch
from torch_paths import CPU_FUSED_ADAM, needs_cpu_fused_adam, needs_private_paths

from sample_factory.algo.learning import optimizers
from sample_factory.algo.learning.optimizers import (
    FlatAdam,
    Lamb,
    LeanAdamStep,
    SgdStep,
    clip_grad_norm,
    make_optimizer,
)


def _mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _backward(model: torch.nn.Module, seed: int, scale: float = 1.0) -> None:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(32, 5, generator=generator)
    for param in model.parameters():
        param.grad = None
    (scale * model(x).square().mean()).backward()


@pytest.mark.parametrize("max_norm", [0.01, 1e6, float("inf")])
def test_clip_grad_norm_matches_torch(max_norm):
    ours, theirs = _mlp(0), _mlp(0)
    _backward(ours, 1, scale=50.0)
    _backward(theirs, 1, scale=50.0)
    norm = clip_grad_norm([p.grad for p in ours.parameters()], max_norm)
    expected = torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), max_norm)
    assert torch.equal(norm, expected)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a.grad, b.grad)
    if max_norm == 0.01:  # clipping happened: the result has the requested norm
        assert torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in ours.parameters()])).item() == (
            pytest.approx(0.01, rel=1e-4)
        )


def test_clip_grad_norm_of_nothing_is_zero():
    assert clip_grad_norm([], 1.0).item() == 0.0


def _adam(model: torch.nn.Module, **kwargs) -> torch.optim.Adam:
    return torch.optim.Adam(model.parameters(), lr=1e-2, fused=True, **kwargs)


@needs_cpu_fused_adam
def test_lean_adam_step_is_bit_identical_to_adam_step_with_changing_lr():
    ours, theirs = _mlp(0), _mlp(0)
    ours_opt, theirs_opt = _adam(ours), _adam(theirs)
    lean = LeanAdamStep(ours_opt)
    assert lean.enabled
    for step in range(20):
        for group in (*ours_opt.param_groups, *theirs_opt.param_groups):
            group["lr"] = 1e-2 / (1 + step)  # a schedule changes the lr between steps
        _backward(ours, step)
        _backward(theirs, step)
        assert lean._lean_step()  # the first step too: torch's _init_group creates the moments
        theirs_opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(ours_opt.state[a][key], theirs_opt.state[b][key])


@needs_cpu_fused_adam
def test_lean_adam_step_creates_the_moments_of_a_parameter_that_gets_its_first_gradient_late():
    """A parameter without a gradient is skipped and gets no state, as in torch's step; when it first gets one, its
    moments and step counter start then, so the two parameters' counters differ, as they do with torch's step."""
    ours, theirs = _mlp(0), _mlp(0)
    ours_opt, theirs_opt = _adam(ours), _adam(theirs)
    lean = LeanAdamStep(ours_opt)
    late_ours, late_theirs = ours[-1].bias, theirs[-1].bias
    for step in range(4):
        _backward(ours, step)
        _backward(theirs, step)
        if step < 2:
            late_ours.grad, late_theirs.grad = None, None
        assert lean._lean_step()
        theirs_opt.step()
    assert ours_opt.state[late_ours]["step"].item() == 2
    assert ours_opt.state[ours[0].weight]["step"].item() == 4
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
        assert sorted(ours_opt.state[a]) == sorted(theirs_opt.state[b])
        for key in ("exp_avg", "exp_avg_sq", "step"):
            assert ours_opt.state[a][key].dtype == theirs_opt.state[b][key].dtype
            assert torch.equal(ours_opt.state[a][key], theirs_opt.state[b][key])


@needs_cpu_fused_adam
def test_lean_adam_step_leaves_an_unknown_init_group_to_the_normal_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch whose Adam._init_group takes other arguments: the first step goes through optimizer.step()."""
    model = _mlp(0)
    optimizer = _adam(model)
    monkeypatch.setattr(optimizer, "_init_group", lambda group, params, grads: None)
    lean = LeanAdamStep(optimizer)
    _backward(model, 0)
    assert not lean._lean_step()
    assert not optimizer.state


@needs_cpu_fused_adam
def test_lean_adam_step_after_loading_a_state_dict_uses_the_loaded_moments():
    source, target, reference = _mlp(0), _mlp(0), _mlp(0)
    source_opt = _adam(source)
    for step in range(3):
        _backward(source, step)
        source_opt.step()
    target_opt, reference_opt = _adam(target), _adam(reference)
    for model, opt in ((target, target_opt), (reference, reference_opt)):
        model.load_state_dict(source.state_dict())
        opt.load_state_dict(copy.deepcopy(source_opt.state_dict()))  # load_state_dict may keep the same tensors
    lean = LeanAdamStep(target_opt)
    _backward(target, 7)
    _backward(reference, 7)
    assert lean._lean_step()
    reference_opt.step()
    for a, b in zip(target.parameters(), reference.parameters(), strict=True):
        assert torch.equal(a, b)
    assert target_opt.state[next(target.parameters())]["step"].item() == 4


@needs_cpu_fused_adam
def test_lean_adam_step_leaves_hooks_and_other_optimisers_to_the_normal_step():
    model = _mlp(0)
    assert not LeanAdamStep(torch.optim.Adam(model.parameters(), lr=1e-3)).enabled  # not fused
    assert not LeanAdamStep(torch.optim.Adam(model.parameters(), lr=1e-3, fused=True, amsgrad=True)).enabled
    assert not LeanAdamStep(Lamb(model.parameters(), lr=1e-3)).enabled
    optimizer = _adam(model)
    lean = LeanAdamStep(optimizer)
    calls = []
    handle = optimizer.register_step_post_hook(lambda *args: calls.append(1))
    for step in range(3):
        _backward(model, step)
        lean()
    assert calls == [1, 1, 1]  # every step went through optimizer.step(), which runs the hook
    handle.remove()
    _backward(model, 9)
    assert lean._lean_step()


def _flat_step(model: torch.nn.Module, flat: FlatAdam, optimizer: torch.optim.Optimizer, seed: int, max_norm: float):
    """One training step the way the learner makes it: flat when possible, else the per-tensor path."""
    assert flat.zero_grad()
    generator = torch.Generator().manual_seed(seed)
    (50.0 * model(torch.randn(32, 5, generator=generator)).square().mean()).backward()
    norm = flat.clip_and_step(max_norm)
    if norm is None:
        norm = clip_grad_norm([p.grad for p in model.parameters()], max_norm)
        optimizer.step()
    return norm


def _torch_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, seed: int, max_norm: float):
    _backward(model, seed, scale=50.0)
    norm = torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm)
    optimizer.step()
    return norm


@pytest.mark.parametrize("max_norm", [0.05, float("inf")])
@needs_cpu_fused_adam
def test_flat_adam_trains_like_torch_clip_and_adam(max_norm):
    ours, theirs = _mlp(0), _mlp(0)
    ours_opt, theirs_opt = _adam(ours), _adam(theirs)
    flat = FlatAdam(ours_opt)
    assert flat.enabled
    for param in ours.parameters():  # the parameters are views of one flat tensor, the objects unchanged
        assert param.untyped_storage().data_ptr() == flat.flat_param.untyped_storage().data_ptr()
    for step in range(15):
        for group in (*ours_opt.param_groups, *theirs_opt.param_groups):
            group["lr"] = 1e-2 / (1 + step)
        norm = _flat_step(ours, flat, ours_opt, step, max_norm)
        expected = _torch_step(theirs, theirs_opt, step, max_norm)
        torch.testing.assert_close(norm, expected, rtol=1e-5, atol=0)
        assert (ours_opt.state is flat._adopted_state) is (step > 0)  # the first step creates the moments
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)  # only the norm's summation order differs
        torch.testing.assert_close(ours_opt.state[a]["exp_avg"], theirs_opt.state[b]["exp_avg"], rtol=1e-4, atol=1e-7)
        assert ours_opt.state[a]["step"].item() == theirs_opt.state[b]["step"].item() == 15


@needs_cpu_fused_adam
def test_flat_adam_state_dict_round_trip_continues_exactly():
    """A checkpoint of a flat optimiser has the per-parameter form; loading it (a new state dict) is re-adopted."""
    model, resumed = _mlp(0), _mlp(1)
    opt, resumed_opt = _adam(model), _adam(resumed)
    flat, resumed_flat = FlatAdam(opt), FlatAdam(resumed_opt)
    for step in range(4):
        _flat_step(model, flat, opt, step, 0.05)
    state = copy.deepcopy(opt.state_dict())
    assert sorted(state["state"]) == list(range(4))
    assert {entry["step"].item() for entry in state["state"].values()} == {4.0}
    resumed.load_state_dict(copy.deepcopy(model.state_dict()))  # copies into the views: still flat
    resumed_opt.load_state_dict(state)
    for step in range(4, 8):
        _flat_step(model, flat, opt, step, 0.05)
        _flat_step(resumed, resumed_flat, resumed_opt, step, 0.05)
    assert resumed_opt.state is resumed_flat._adopted_state
    for a, b in zip(model.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
        assert resumed_opt.state[b]["step"].item() == 8


def _flat_trained(steps: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, FlatAdam]:
    """A model trained ``steps`` flat steps (its moments adopted from the second step on)."""
    model = _mlp(0)
    optimizer = _adam(model)
    flat = FlatAdam(optimizer)
    for step in range(steps):
        _flat_step(model, flat, optimizer, step, 1.0)
    return model, optimizer, flat


@needs_cpu_fused_adam
def test_flat_adam_steps_through_hooks_with_one_counter_per_tensor():
    model, optimizer, flat = _flat_trained(3)
    calls = []
    handle = optimizer.register_step_post_hook(lambda *args: calls.append(1))
    for step in range(3, 5):
        assert _flat_step(model, flat, optimizer, step, 1.0) is not None
    assert calls == [1, 1]
    counters = [optimizer.state[p]["step"] for p in model.parameters()]
    assert len({id(c) for c in counters}) == 4 and {c.item() for c in counters} == {5.0}  # each advanced once a step
    handle.remove()
    _flat_step(model, flat, optimizer, 5, 1.0)
    assert optimizer.state is flat._adopted_state and optimizer.state[next(model.parameters())]["step"].item() == 6


@needs_cpu_fused_adam
def test_flat_adam_switches_off_when_the_weights_move_to_other_tensors():
    model, optimizer, flat = _flat_trained(2)
    first = next(model.parameters())
    first.data = first.data.clone()  # e.g. a move to another device: the parameter no longer views flat_param
    assert not flat.zero_grad() and not flat.enabled
    before = first.detach().clone()
    _backward(model, 3)
    optimizer.step()  # the per-tensor path trains the real weights, with one step counter per tensor again
    assert not torch.equal(first, before)
    assert {optimizer.state[p]["step"].item() for p in model.parameters()} == {3.0}


@needs_cpu_fused_adam
def test_flat_adam_is_off_where_it_does_not_apply():
    model = _mlp(0)
    assert not FlatAdam(torch.optim.Adam(model.parameters(), lr=1e-3)).enabled  # not fused
    assert not FlatAdam(Lamb(model.parameters(), lr=1e-3)).enabled
    conv = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    assert not FlatAdam(torch.optim.Adam(conv.parameters(), lr=1e-3, fused=True)).enabled
    mixed = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).double()])
    assert not FlatAdam(torch.optim.Adam(mixed.parameters(), lr=1e-3, fused=True)).enabled


class _SometimesHead(torch.nn.Module):
    """An MLP whose second layer is used only when ``use_head`` is set: its parameters miss some gradients."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.body, self.head = torch.nn.Linear(5, 16), torch.nn.Linear(16, 3)
        self.use_head = True

    def forward(self, x):
        x = torch.tanh(self.body(x))
        return self.head(x) if self.use_head else x


@pytest.mark.parametrize("first_missing_step", [0, 3])
@needs_cpu_fused_adam
def test_watched_flat_adam_skips_parameters_without_gradients_as_torch_does(first_missing_step):
    """Unwatched, flat mode would update the head with zero gradients (its moments still move it); watched, the first
    step without a head gradient leaves flat mode and every step equals torch's clip + Adam."""
    ours, theirs = _SometimesHead(0), _SometimesHead(0)
    ours_opt, theirs_opt = _adam(ours), _adam(theirs)
    step = SgdStep(ours_opt, ours.parameters(), flat=True, watch_gradients=True)
    assert step.flat.enabled and step.flat.received is not None
    for k in range(6):
        ours.use_head = theirs.use_head = k < first_missing_step or k % 2 == 1
        x = torch.randn(32, 5, generator=torch.Generator().manual_seed(k))
        norm = step((50.0 * ours(x).square().mean()), 0.05)
        for param in theirs.parameters():
            param.grad = None
        (50.0 * theirs(x).square().mean()).backward()
        expected = torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), 0.05)
        theirs_opt.step()
        torch.testing.assert_close(norm, expected, rtol=1e-5, atol=0)
    assert not step.flat.enabled
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert ours_opt.state[a]["step"].item() == theirs_opt.state[b]["step"].item()


@needs_cpu_fused_adam
def test_sgd_step_without_flat_tensors_leaves_the_weights_where_they_are():
    model = _mlp(0)
    before = [p.data_ptr() for p in model.parameters()]
    step = SgdStep(_adam(model), model.parameters(), flat=False)
    assert step.flat is None
    step(model(torch.ones(2, 5)).sum(), float("inf"))
    assert [p.data_ptr() for p in model.parameters()] == before
    other = _mlp(0)
    assert SgdStep(_adam(other), other.parameters()).flat.enabled


@needs_private_paths
@needs_cpu_fused_adam
def test_creating_the_optimizer_does_not_import_dynamo() -> None:
    """torch.optim's dynamo guards cost about a second of a learner's start-up when they import torch._dynamo; with
    it unloaded they are filled with the plain methods, which then behave as before (zero_grad, state_dict), and
    training steps create the moments without ``Adam.step``."""
    code = textwrap.dedent(
        """
        import sys, types, torch
        from sample_factory.algo.learning.optimizers import make_optimizer
        cfg = types.SimpleNamespace(optimizer="adam", adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-6,
                                    learning_rate=1e-3)
        layer = torch.nn.Linear(3, 2)
        optimizer = make_optimizer(cfg, layer.parameters())
        layer(torch.ones(1, 3)).sum().backward()
        optimizer.zero_grad()
        assert all(p.grad is None for p in layer.parameters())
        from sample_factory.algo.learning.optimizers import SgdStep
        sgd_step = SgdStep(optimizer, list(layer.parameters()))
        for _ in range(2):  # the first update creates Adam's moments without Adam.step (which imports dynamo)
            sgd_step(layer(torch.ones(1, 3)).sum(), 1.0)
        assert len(optimizer.state) == 2
        assert optimizer.state_dict()["param_groups"][0]["lr"] == 1e-3
        print("dynamo loaded:", "torch._dynamo" in sys.modules)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "dynamo loaded: False" in result.stdout


def test_with_dynamo_loaded_the_guards_are_left_to_torch() -> None:
    code = textwrap.dedent(
        """
        import torch._dynamo
        from sample_factory.algo.learning.optimizers import skip_dynamo_import
        print("filled:", skip_dynamo_import())
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "filled: False" in result.stdout, result.stderr


def _adam_cfg() -> types.SimpleNamespace:
    return types.SimpleNamespace(optimizer="adam", adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-6, learning_rate=1e-2)


def test_adam_is_fused_where_this_torch_fuses_it_on_the_cpu():
    optimizer = make_optimizer(_adam_cfg(), _mlp(0).parameters())
    assert bool(optimizer.param_groups[0].get("fused")) is CPU_FUSED_ADAM


def test_without_a_fused_adam_training_is_torchs_clipping_and_adam_step(monkeypatch, caplog):
    """Where torch cannot fuse Adam for the parameters (before torch 2.4 on the CPU; made so here on a torch that can),
    the optimiser is torch's default Adam, said in one line; the lean and flat paths are off and each step is
    ``clip_grad_norm_`` and ``Adam.step``."""
    if CPU_FUSED_ADAM:
        fusing_init = torch.optim.Adam.__init__

        def init_without_fusing(self, params, *args, fused=None, **kwargs):
            if fused:
                raise RuntimeError("`fused=True` requires all the params to be on a supported device (test)")
            fusing_init(self, params, *args, fused=fused, **kwargs)

        monkeypatch.setattr(torch.optim.Adam, "__init__", init_without_fusing)
    monkeypatch.setattr(optimizers, "_unfused_adam_logged", False)
    caplog.set_level("INFO")
    ours, theirs = _mlp(0), _mlp(0)
    optimizer = make_optimizer(_adam_cfg(), ours.parameters())
    assert not optimizer.param_groups[0].get("fused")
    said = [r.getMessage() for r in caplog.records if "not the fused one" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("Optimizer: torch's default Adam, not the fused one (torch "), said
    step = SgdStep(optimizer, ours.parameters())
    assert step.flat is None and not step.lean_step.enabled
    reference = torch.optim.Adam(theirs.parameters(), lr=1e-2, betas=(0.9, 0.999), eps=1e-6)
    for seed in range(5):
        x = torch.randn(32, 5, generator=torch.Generator().manual_seed(seed))
        norm = step(ours(x).square().mean(), 0.05)
        for param in theirs.parameters():
            param.grad = None
        theirs(x).square().mean().backward()
        expected = torch.nn.utils.clip_grad_norm_(list(theirs.parameters()), 0.05)
        reference.step()
        torch.testing.assert_close(norm, expected)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b)
