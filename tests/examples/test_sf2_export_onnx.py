"""ONNX export through Sample Factory 2's names: ``export_onnx(cfg, f)``, ``create_onnx_exporter(cfg, env,
enable_jit)`` called with keywords, ``OnnxExporter(cfg, env_info, actor_critic)`` and the input helpers.

The policy is a fresh model saved as an experiment's checkpoint (no training needed to check that ONNX Runtime
and PyTorch agree).
"""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from sample_factory.cfg.arguments import default_cfg, load_from_checkpoint, parse_full_cfg, parse_sf_args
from sample_factory.cfg.experiment_files import save_config
from sample_factory.enjoy import make_env
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.env_utils import register_env
from sample_factory.export_onnx import (
    OnnxExporter,
    create_forward,
    create_onnx_exporter,
    export_onnx,
    generate_args,
    generate_rnn_states,
    patch_forward,
    sample_space,
    unsqueeze_args,
)
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.utils import checkpoint_dir

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

OBS_SPACE = gym.spaces.Box(-3.0, 3.0, (5,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(4)


class _VectorEnv(gym.Env):
    observation_space, action_space = OBS_SPACE, ACTION_SPACE

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def _experiment(tmp_path: Path, name: str, use_rnn: bool):
    """config.json and one checkpoint of an untrained model, then the config an export script parses."""
    env_name = f"sf2_onnx_{name}"
    register_env(env_name, lambda *args, **kwargs: _VectorEnv())
    cfg = default_cfg(env=env_name)
    cfg.train_dir, cfg.experiment, cfg.device, cfg.use_rnn, cfg.rnn_size = str(tmp_path), name, "cpu", use_rnn, 8
    save_config(cfg)
    torch.manual_seed(3)
    model = create_actor_critic(cfg, OBS_SPACE, ACTION_SPACE)
    state = {"model": model.state_dict(), "train_step": 1, "env_steps": 10, "policy_version": 1}
    torch.save(state, Path(checkpoint_dir(cfg, 0)) / "checkpoint_000000001_10.pth")
    argv = [f"--env={env_name}", f"--train_dir={tmp_path}", f"--experiment={name}"]
    parser, _ = parse_sf_args(argv, evaluation=True)
    return parse_full_cfg(parser, argv)


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def test_feed_forward_policy_answers_like_onnxruntime(tmp_path: Path, clean_context) -> None:
    cfg = _experiment(tmp_path, "mlp", use_rnn=False)
    filename = tmp_path / "mlp.onnx"
    assert export_onnx(cfg, str(filename)) == 0

    cfg = load_from_checkpoint(cfg)
    env = make_env(cfg)
    model = create_onnx_exporter(cfg, env, enable_jit=True)
    session = ort.InferenceSession(str(filename), providers=["CPUExecutionProvider"])
    for batch_size in (1, 3):
        args = generate_args(env.observation_space, batch_size)
        actions = model(**args)  # keywords: the actions alone for a model without an RNN
        rnn_states = np.zeros((batch_size, 1), np.float32)
        onnx_actions = session.run(None, {**{k: _numpy(v) for k, v in args.items()}, "rnn_states": rnn_states})[0]
        assert actions.shape == (batch_size,) and len(onnx_actions) == batch_size
        np.testing.assert_array_equal(_numpy(actions), onnx_actions)
    env.close()


def test_recurrent_policy_carries_its_state_like_onnxruntime(tmp_path: Path, clean_context) -> None:
    cfg = _experiment(tmp_path, "gru", use_rnn=True)
    stream = io.BytesIO()
    assert export_onnx(cfg, stream) == 0  # a binary stream works as well as a path
    session = ort.InferenceSession(stream.getvalue(), providers=["CPUExecutionProvider"])

    cfg = load_from_checkpoint(cfg)
    env = make_env(cfg)
    model = create_onnx_exporter(cfg, env)
    rnn_states = generate_rnn_states(cfg)
    assert rnn_states.shape == (1, 8) and not rnn_states.any()
    onnx_states = _numpy(rnn_states)
    for _ in range(3):
        args = generate_args(env.observation_space)
        actions, rnn_states = model(**args, rnn_states=rnn_states)
        onnx_out = session.run(None, {**{k: _numpy(v) for k, v in args.items()}, "rnn_states": onnx_states})
        onnx_states = onnx_out[1]
        np.testing.assert_array_equal(_numpy(actions), onnx_out[0])
        np.testing.assert_allclose(_numpy(rnn_states), onnx_states, rtol=1e-4, atol=1e-5)
    assert np.abs(onnx_states).sum() > 0, "the GRU updated its state"
    env.close()


def test_onnx_exporter_built_from_cfg_env_info_and_model(tmp_path: Path, clean_context) -> None:
    cfg = _experiment(tmp_path, "direct", use_rnn=True)
    cfg = load_from_checkpoint(cfg)
    env = make_env(cfg)
    env_info = extract_env_info(env, cfg)
    env.close()
    model = create_actor_critic(cfg, OBS_SPACE, ACTION_SPACE)
    exporter = OnnxExporter(cfg, env_info, model)
    assert exporter.env_info is env_info and exporter.input_names == ["obs", "rnn_states"]
    args = generate_args(OBS_SPACE, 2)
    actions, states, logits = exporter(args["obs"], generate_rnn_states(cfg, 2))  # positional: the graph's outputs
    keyword_actions, keyword_states = exporter(obs=args["obs"])  # rnn_states left out: zeros
    assert torch.equal(actions, keyword_actions) and torch.allclose(states, keyword_states)
    assert logits.shape == (2, 4)
    with pytest.raises(ValueError, match="unknown \\['observation'\\], missing \\['obs'\\]"):
        exporter(observation=args["obs"])
    with pytest.raises(TypeError, match="needs the policy's model as actor_critic"):
        OnnxExporter(cfg, env_info, None)


def test_sample_space_and_unsqueeze_args() -> None:
    space = gym.spaces.Dict({"img": gym.spaces.Box(0, 255, (3, 4, 4), np.uint8), "pos": gym.spaces.Discrete(5)})
    sample = sample_space(space)
    assert sorted(sample) == ["img", "pos"] and sample["img"].dtype == torch.uint8 and sample["img"].shape == (3, 4, 4)
    assert 0 <= int(sample["pos"]) < 5
    box = sample_space(OBS_SPACE)
    assert box.shape == (5,) and bool((box.abs() <= 3.0).all())
    batched = unsqueeze_args({"img": sample["img"], "obs": box})
    assert batched["img"].shape == (1, 3, 4, 4) and batched["obs"].shape == (1, 5)
    assert torch.equal(batched["obs"][0], box)


class _KeywordModule(nn.Module):
    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        return inputs["a"] * 10 + inputs["b"]


def test_patch_forward_calls_keyword_forward_positionally() -> None:
    forward = create_forward(lambda **kw: (kw["x"], kw["y"]), ["y", "x"])
    assert forward(1, 2) == (2, 1)
    assert list(inspect.signature(forward).parameters) == ["y", "x"]
    with pytest.raises(TypeError, match="takes 2 positional inputs"):
        forward(1)

    module = patch_forward(_KeywordModule(), ["b", "a"])
    assert module(torch.tensor(1.0), torch.tensor(2.0)).item() == 21.0
