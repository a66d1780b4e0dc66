"""The pieces ``export_onnx`` is built from: ``generate_args``, ``create_onnx_exporter`` and ``OnnxExporter``.

No ONNX package is needed here: these run the module that gets traced, in PyTorch.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from lifecycle_helpers import eval_cfg, fake_experiment

from sample_factory.algo.sampling.evaluation_episodes import policy_step
from sample_factory.cfg.arguments import load_from_checkpoint
from sample_factory.enjoy import NoCheckpointError, make_env
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.env_utils import register_env
from sample_factory.export_onnx import OnnxExporter, create_onnx_exporter, generate_args
from sample_factory.model.model_utils import get_rnn_size

IMAGE_AND_VECTOR = gym.spaces.Dict(
    {"obs": gym.spaces.Box(0, 255, (3, 40, 40), np.uint8), "measurements": gym.spaces.Box(-5, 5, (4,), np.float32)}
)


class _SpacesEnv(gym.Env):
    def __init__(self, obs_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space, self.action_space = obs_space, action_space

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def test_generate_args_samples_each_key_with_its_shape_and_dtype() -> None:
    box = gym.spaces.Box(-2.0, 2.0, (6,), np.float32)
    args = generate_args(box, batch_size=5)
    assert list(args) == ["obs"] and args["obs"].shape == (5, 6) and args["obs"].dtype == torch.float32
    assert bool((args["obs"].abs() <= 2.0).all()) and args["obs"].std() > 0  # samples of the space, not zeros

    args = generate_args(IMAGE_AND_VECTOR)
    assert {key: (tuple(t.shape), t.dtype) for key, t in args.items()} == {
        "obs": ((1, 3, 40, 40), torch.uint8),
        "measurements": ((1, 4), torch.float32),
    }
    with pytest.raises(ValueError, match="batch_size >= 1"):
        generate_args(box, batch_size=0)


@pytest.fixture
def gru_experiment(tmp_path: Path):
    env_name = "onnx_parts_gru"
    register_env(env_name, lambda *args, **kwargs: _SpacesEnv(IMAGE_AND_VECTOR, gym.spaces.Discrete(4)))
    overrides = {"use_rnn": True, "rnn_type": "gru", "rnn_size": 16, "encoder_conv_architecture": "convnet_simple"}
    _, model = fake_experiment(tmp_path, "gru", env_name, IMAGE_AND_VECTOR, gym.spaces.Discrete(4), **overrides)
    return load_from_checkpoint(eval_cfg(env_name, tmp_path, "gru")), model


def test_exporter_acts_like_the_checkpointed_policy(gru_experiment) -> None:
    cfg, model = gru_experiment
    env = make_env(cfg)
    exporter = create_onnx_exporter(cfg, env)
    env.close()
    assert isinstance(exporter, OnnxExporter) and not exporter.training
    assert exporter.input_names == ["measurements", "obs", "rnn_states"]  # the model's (sorted) key order

    torch.manual_seed(2)
    obs = generate_args(env.observation_space, batch_size=4)
    rnn_states = torch.randn(4, get_rnn_size(cfg))
    actions, new_states, logits = exporter(*(obs[key] for key in exporter.obs_keys), rnn_states)
    expected_actions, expected_states = policy_step(model, obs, rnn_states, deterministic=True)
    torch.testing.assert_close(new_states, expected_states)
    assert torch.equal(actions, expected_actions) and logits.shape == (4, 4)
    assert not torch.allclose(new_states, rnn_states)


def test_exporter_from_env_info_and_its_example_args(gru_experiment) -> None:
    cfg, _ = gru_experiment
    env = make_env(cfg)
    exporter = create_onnx_exporter(cfg, extract_env_info(env, cfg))
    env.close()
    args = exporter.example_args(batch_size=3)
    assert [tuple(t.shape) for t in args] == [(3, 4), (3, 3, 40, 40), (3, 16)]
    actions, new_states, _ = exporter(*args)
    assert actions.shape == (3,) and new_states.shape == (3, 16)
    with pytest.raises(ValueError, match="positional inputs"):
        exporter(*args[:-1])


def test_create_onnx_exporter_without_checkpoint_says_how_to_train(tmp_path: Path) -> None:
    env_name = "onnx_parts_untrained"
    register_env(env_name, lambda *args, **kwargs: _SpacesEnv(IMAGE_AND_VECTOR, gym.spaces.Discrete(4)))
    cfg = eval_cfg(env_name, tmp_path, "never_trained")
    env = make_env(cfg)
    with pytest.raises(NoCheckpointError, match="Train it first"):
        create_onnx_exporter(cfg, env)
    env.close()
