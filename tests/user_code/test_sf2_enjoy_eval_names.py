"""Sample Factory 2's helpers of ``sample_factory.enjoy`` and ``sample_factory.eval`` as a project's own play loop
uses them: ``load_state_dict(cfg, actor_critic, device)``, ``render_frame(cfg, env, video_frames, num_episodes,
last_render_start)``, ``visualize_policy_inputs(normalized_obs)`` and ``generate_trajectories(cfg, env_info,
sample_env_episodes)``, on an experiment the project's script trained (``sf2_project_script.py``)."""

from __future__ import annotations

import csv
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from sf2_project_envs import ENV_FACTORIES
from sf_run import run_python

from sample_factory.algo.utils.checkpoints import load_latest_checkpoint
from sample_factory.cfg.arguments import load_from_checkpoint, parse_full_cfg, parse_sf_args
from sample_factory.enjoy import load_state_dict, make_env, policy_input_image, render_frame, visualize_policy_inputs
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.env_utils import register_env
from sample_factory.eval import EVAL_RESULTS_FILE, generate_trajectories
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.attr_dict import AttrDict

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "project_scored_pole"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    train_dir = tmp_path_factory.mktemp("trained")
    args = [os.path.join(HERE, "sf2_project_script.py"), "train", f"--env={ENV}", f"--train_dir={train_dir}"]
    result = run_python([*args, "--experiment=project", "--serial_mode=True", "--train_for_env_steps=512"], 180)
    assert result.returncode == 0, result.explain()
    return train_dir


def project_cfg(train_dir: Path, *flags: str):
    """The project's evaluation config of the trained experiment, as its enjoy script builds it."""
    for name, make in ENV_FACTORIES.items():
        register_env(name, make)
    argv = [f"--env={ENV}", f"--train_dir={train_dir}", "--experiment=project", "--device=cpu", *flags]
    parser, _ = parse_sf_args(argv=argv, evaluation=True)
    return load_from_checkpoint(parse_full_cfg(parser, argv))


def test_load_state_dict_puts_the_checkpointed_weights_into_the_actor_critic(trained: Path) -> None:
    cfg = project_cfg(trained)
    env = make_env(cfg)
    try:
        actor_critic = create_actor_critic(cfg, env.observation_space, env.action_space)
    finally:
        env.close()
    expected = load_latest_checkpoint(cfg, 0, torch.device("cpu"))["model"]
    assert any(not torch.equal(v, expected[k]) for k, v in actor_critic.state_dict().items() if v.is_floating_point())
    load_state_dict(cfg, actor_critic, "cpu")
    loaded = actor_critic.state_dict()
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[k], expected[k]) for k in expected)


class _Screen:
    """An env as render_frame sees it: ``render()`` gives a new frame each call (and counts the calls)."""

    def __init__(self) -> None:
        self.calls = 0

    def render(self) -> np.ndarray:
        self.calls += 1
        return np.full((4, 6, 3), self.calls, dtype=np.uint8)


def test_render_frame_collects_video_frames_up_to_video_frames() -> None:
    cfg, screen, frames = AttrDict(save_video=True, video_frames=3, no_render=False, fps=0), _Screen(), []
    last = 0.0
    for _ in range(5):
        started = render_frame(cfg, screen, frames, 0, last)
        assert started >= last
        last = started
    assert screen.calls == 3 and [int(f[0, 0, 0]) for f in frames] == [1, 2, 3]
    assert all(f.shape == (4, 6, 3) for f in frames)


def test_render_frame_keeps_only_the_first_episode_with_negative_video_frames() -> None:
    cfg, screen, frames = AttrDict(save_video=True, video_frames=-1, no_render=False, fps=0), _Screen(), []
    for episode in (0, 0, 1, 1):
        render_frame(cfg, screen, frames, episode, 0.0)
    assert len(frames) == 2 and screen.calls == 2


def test_render_frame_shows_frames_at_most_fps_per_second_unless_no_render() -> None:
    cfg, screen = AttrDict(save_video=False, video_frames=10, no_render=False, fps=20), _Screen()
    last = render_frame(cfg, screen, [], 0, 0.0)
    before = time.time()
    second = render_frame(cfg, screen, [], 0, last)
    assert screen.calls == 2 and second - last >= 0.045 and second >= before
    render_frame(AttrDict(cfg, no_render=True), screen, [], 0, second)
    assert screen.calls == 2


def test_visualize_policy_inputs_shows_the_first_image_stretched(monkeypatch) -> None:
    shown = []
    fake_cv2 = types.SimpleNamespace(
        COLOR_RGB2BGR=4,
        cvtColor=lambda image, code: image[:, :, ::-1],
        imshow=lambda name, image: shown.append((name, image)),
        waitKey=lambda delay: -1,
    )
    monkeypatch.setitem(sys.modules, "cv2", fake_cv2)
    obs = torch.zeros(2, 3, 5, 7)
    obs[0, 0] = -1.0  # red channel low, the rest 0: stretched to 0 and 255
    visualize_policy_inputs({"obs": obs})
    assert len(shown) == 1 and shown[0][0] == "policy inputs"
    image = shown[0][1]
    assert image.shape == (5, 7, 3) and image.dtype == np.uint8
    assert image[..., 2].max() == 0 and image[..., 0].min() == 255  # BGR: red (low) last
    visualize_policy_inputs({"obs": torch.zeros(2, 4)})  # vectors are not images: nothing shown
    assert len(shown) == 1 and policy_input_image({"obs": torch.zeros(2, 4)}) is None


def test_generate_trajectories_plays_the_episodes_asked_for(trained: Path) -> None:
    cfg = project_cfg(trained, "--num_workers=1", "--num_envs_per_worker=2")
    env = make_env(cfg)
    try:
        env_info = extract_env_info(env, cfg)
    finally:
        env.close()
    assert generate_trajectories(cfg, env_info, 5) == 0
    with open(trained / "project" / EVAL_RESULTS_FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["episode"]) for r in rows] == [0, 1, 2, 3, 4]
    assert all(int(r["length"]) > 0 and r["balance_steps"] == r["length"] for r in rows), rows
