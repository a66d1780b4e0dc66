"""call_forward_directly: same outputs, parameters and classes as seen by isinstance; modules whose call does more
than forward (hooks, their own __call__) left alone."""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn
from torch_paths import needs_private_paths

from sample_factory.compat.torch_internals import HOOKS_UNREADABLE
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.direct_calls import blocked_modules, call_forward_directly, direct_call_blocker, has_hooks
from sf_examples.train_gym_env import parse_gym_args


def _cartpole_model(*extra: str) -> nn.Module:
    cfg = parse_gym_args(["--env=CartPole-v1", "--device=cpu", "--normalize_input=True", *extra])
    torch.manual_seed(0)
    model = create_actor_critic(cfg, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2))
    return model.eval()


def _outputs(model: nn.Module, seed: int) -> dict:
    torch.manual_seed(seed)  # the actions are sampled
    obs = {"obs": torch.linspace(-2, 2, 36).reshape(9, 4)}
    rnn = torch.zeros(9, model.core.get_out_size() if hasattr(model.core, "get_out_size") else 1)
    with torch.inference_mode():
        return dict(model(model.normalize_obs(obs), rnn))


@needs_private_paths
def test_a_direct_model_computes_what_the_plain_one_does() -> None:
    for extra in ((), ("--use_rnn=True",)):
        plain, direct = _cartpole_model(*extra), _cartpole_model(*extra)
        assert call_forward_directly(direct)
        expected, got = _outputs(plain, 1), _outputs(direct, 1)
        assert expected.keys() == got.keys()
        for key in expected:
            assert torch.equal(expected[key], got[key]), key
        assert list(plain.state_dict()) == list(direct.state_dict())
        for a, b in zip(plain.modules(), direct.modules(), strict=True):
            assert isinstance(b, type(a)) and type(b).__name__ == type(a).__name__


@needs_private_paths
def test_the_direct_call_skips_nn_module_call(monkeypatch) -> None:
    model = _cartpole_model()
    call_forward_directly(model)
    calls = []
    original = nn.Module._call_impl
    monkeypatch.setattr(nn.Module, "_call_impl", lambda self, *a, **k: calls.append(self) or original(self, *a, **k))
    _outputs(model, 2)
    assert calls == []


@needs_private_paths
def test_a_hooked_module_keeps_its_call_and_its_hook_runs() -> None:
    model = _cartpole_model()
    seen = []
    model.encoder.register_forward_hook(lambda module, args, out: seen.append(out.shape))
    assert has_hooks(model)
    assert direct_call_blocker(model.encoder) == "it has a forward hook"
    assert call_forward_directly(model)
    assert type(model.encoder).__call__ is nn.Module.__call__
    assert type(model.critic_linear).__call__ is not nn.Module.__call__  # the others still call forward directly
    _outputs(model, 3)
    assert seen, "the hook still runs"


class _Doubling(nn.Linear):
    """A user layer whose call does more than its forward."""

    def __call__(self, x):
        return 2.0 * super().__call__(x)


@needs_private_paths
def test_a_module_with_its_own_call_is_left_alone_unless_forced() -> None:
    layer = _Doubling(2, 2)
    assert direct_call_blocker(layer) == "_Doubling overrides __call__"
    x = torch.ones(1, 2)
    expected = layer(x)
    call_forward_directly(layer)
    assert torch.equal(layer(x), expected)
    call_forward_directly(layer, force=True)  # the testing switch: what the blocker protects against
    assert torch.equal(2.0 * layer(x), expected)


@needs_private_paths
def test_blocked_modules_names_each_with_its_reason() -> None:
    model = _cartpole_model()
    model.decoder.forward = lambda x: x
    model.critic_linear.register_forward_pre_hook(lambda module, args: None)
    assert blocked_modules(model) == [
        ("decoder", model.decoder, "it has a forward or __call__ of its own instance"),
        ("critic_linear", model.critic_linear, "it has a forward pre-hook"),
    ]


def test_a_global_hook_leaves_every_model_alone() -> None:
    handle = nn.modules.module.register_module_forward_hook(lambda module, args, out: None)
    try:
        assert not call_forward_directly(_cartpole_model())
    finally:
        handle.remove()


def test_with_torchs_private_paths_off_every_module_keeps_its_call(public_torch_paths) -> None:
    """Hooks and in-place compilation cannot be read without torch's private names: every module is left to
    ``nn.Module.__call__``, and the model computes what it did."""
    plain, model = _cartpole_model(), _cartpole_model()
    classes = [type(module) for module in model.modules()]
    assert direct_call_blocker(model.encoder) == HOOKS_UNREADABLE
    assert not call_forward_directly(model)
    assert [type(module) for module in model.modules()] == classes
    expected, got = _outputs(plain, 4), _outputs(model, 4)
    assert all(torch.equal(expected[key], got[key]) for key in expected)
