"""ONNX export: onnxruntime reproduces PyTorch's deterministic actions and RNN states for MLP and conv+GRU models."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from lifecycle_helpers import captured_log, eval_cfg, fake_experiment, random_obs

from sample_factory.algo.sampling.evaluation_episodes import policy_step
from sample_factory.envs.env_utils import register_env
from sample_factory.export_onnx import OUTPUT_NAMES, export_onnx
from sample_factory.model.model_utils import get_rnn_size

ort = pytest.importorskip("onnxruntime")
BATCH = 5

SPACES = {
    "mlp": (gym.spaces.Box(-2, 2, (6,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32), {"use_rnn": False}),
    "conv_gru": (
        gym.spaces.Dict(
            {"obs": gym.spaces.Box(0, 255, (3, 40, 40), np.uint8), "measurements": gym.spaces.Box(-5, 5, (4,))}
        ),
        gym.spaces.Discrete(5),
        {"use_rnn": True, "rnn_type": "gru", "rnn_size": 32, "encoder_conv_architecture": "convnet_simple"},
    ),
}


class _SpacesEnv(gym.Env):
    """Only the spaces matter: export creates one env to learn them."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space, self.action_space = obs_space, action_space

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


@pytest.mark.parametrize("kind", list(SPACES))
def test_onnxruntime_matches_pytorch(tmp_path: Path, kind: str) -> None:
    obs_space, action_space, overrides = SPACES[kind]
    env_name = f"onnx_test_{kind}"
    register_env(env_name, lambda *args, **kwargs: _SpacesEnv(obs_space, action_space))
    cfg, model = fake_experiment(tmp_path, kind, env_name, obs_space, action_space, **overrides)
    path = tmp_path / f"{kind}.onnx"
    assert export_onnx(eval_cfg(env_name, tmp_path, kind), str(path)) == 0
    session = ort.InferenceSession(str(path))
    assert [o.name for o in session.get_outputs()] == OUTPUT_NAMES
    assert [i.name for i in session.get_inputs()] == [*model.obs_space.spaces, "rnn_states"]

    torch.manual_seed(1)
    obs = random_obs(model, BATCH)
    rnn_states = torch.randn(BATCH, get_rnn_size(cfg))
    actions, new_states = policy_step(model, obs, rnn_states, deterministic=True)
    feeds = {key: value.numpy() for key, value in obs.items()} | {"rnn_states": rnn_states.numpy()}
    onnx_actions, onnx_states, onnx_logits = session.run(None, feeds)
    np.testing.assert_allclose(onnx_states, new_states.numpy(), rtol=1e-4, atol=1e-5)
    if kind == "conv_gru":
        assert not np.allclose(onnx_states, rnn_states.numpy())  # the GRU really updated its state
        np.testing.assert_array_equal(onnx_actions, actions.numpy())
    else:
        np.testing.assert_allclose(onnx_actions, actions.numpy(), rtol=1e-4, atol=1e-5)
    assert onnx_logits.shape[0] == BATCH


def test_export_without_checkpoint_fails_cleanly(tmp_path: Path) -> None:
    register_env("onnx_test_missing", lambda *a, **k: _SpacesEnv(*SPACES["mlp"][:2]))
    assert export_onnx(eval_cfg("onnx_test_missing", tmp_path, "nothing"), str(tmp_path / "x.onnx")) == 1
    assert not (tmp_path / "x.onnx").exists()


def test_export_refuses_push_to_hub(tmp_path: Path) -> None:
    obs_space, action_space = SPACES["mlp"][:2]
    register_env("onnx_test_hub", lambda *a, **k: _SpacesEnv(obs_space, action_space))
    fake_experiment(tmp_path, "hub", "onnx_test_hub", obs_space, action_space)
    with captured_log() as logs:
        status = export_onnx(eval_cfg("onnx_test_hub", tmp_path, "hub", "--push_to_hub"), str(tmp_path / "x.onnx"))
    assert status == 1
    assert "--push_to_hub: uploading to the Hugging Face Hub is not available" in logs.text()
    assert not (tmp_path / "x.onnx").exists()
