"""The mujoco_* envs in-process: every name builds Sample Factory 2's v4 task, which gets the actions as sampled, or
with --mujoco_version=v5 Gymnasium's current task, whose actions arrive rescaled and clipped."""

from __future__ import annotations

import numpy as np
import pytest

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS, choose_headless_gl, make_mujoco_env, mujoco_available

V5 = AttrDict(mujoco_version="v5")

SF2_NAMES = {
    "mujoco_ant", "mujoco_halfcheetah", "mujoco_hopper", "mujoco_humanoid", "mujoco_standup",
    "mujoco_doublependulum", "mujoco_pendulum", "mujoco_reacher", "mujoco_walker", "mujoco_pusher", "mujoco_swimmer",
}  # fmt: skip


def test_every_sample_factory_2_name_is_its_v4_task_or_the_v5_one() -> None:
    assert set(MUJOCO_ENVS) == SF2_NAMES
    assert MUJOCO_ENVS["mujoco_pendulum"] == "InvertedPendulum-v4"
    assert all(gym_id.endswith("-v4") for gym_id in MUJOCO_ENVS.values())
    for version in ("v4", "v5"):
        env = make_mujoco_env("mujoco_hopper", cfg=AttrDict(mujoco_version=version))
        assert env.spec.id == f"Hopper-{version}"
        env.close()


def _makes(env_name: str, version: str) -> bool:
    import mujoco

    return not (env_name == "mujoco_pusher" and version == "v4" and int(mujoco.__version__.split(".")[0]) >= 3)


@pytest.mark.parametrize("version", ["v4", "v5"])
@pytest.mark.parametrize("env_name", sorted(MUJOCO_ENVS))
def test_env_steps_with_policy_scale_actions(env_name: str, version: str) -> None:
    if not _makes(env_name, version):
        with pytest.raises(ImportError, match="mujoco<3"):  # Gymnasium's own refusal, naming the cause
            make_mujoco_env(env_name, cfg=AttrDict(mujoco_version=version))
        return
    env = make_mujoco_env(env_name, cfg=AttrDict(mujoco_version=version))
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == env.observation_space.shape
        action = np.full(env.action_space.shape, 0.5, dtype=np.float32)
        obs, reward, terminated, truncated, _ = env.step(action)
        assert np.isfinite(reward) and obs.shape == env.observation_space.shape
    finally:
        env.close()


def test_sample_factory_2_tasks_get_the_actions_as_sampled_and_charge_their_control_cost() -> None:
    env = make_mujoco_env("mujoco_halfcheetah")  # the task's range is [-1, 1]
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(np.full(6, 3.0, dtype=np.float32))  # a Gaussian sample outside the range
        assert info["reward_ctrl"] == pytest.approx(-0.1 * 9.0 * 6)  # charged on the action as sampled
        assert np.all(env.unwrapped.data.ctrl == 3.0)  # it reaches the simulator, which clamps it to its range
    finally:
        env.close()


def test_v5_actions_are_clipped_to_unit_box_then_rescaled_to_task_range() -> None:
    env = make_mujoco_env("mujoco_pendulum", cfg=V5)  # the task's own range is [-3, 3]
    try:
        env.reset(seed=0)
        env.step(np.array([0.5], dtype=np.float32))
        assert env.unwrapped.data.ctrl[0] == pytest.approx(1.5)
        env.step(np.array([7.0], dtype=np.float32))  # a Gaussian sample far outside the box
        assert env.unwrapped.data.ctrl[0] == pytest.approx(3.0)
    finally:
        env.close()


def test_frameskip_repeats_actions_and_counts_frames() -> None:
    env = make_mujoco_env("mujoco_halfcheetah", cfg=AttrDict(env_frameskip=2))
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(np.zeros(6, dtype=np.float32))
        assert info["num_frames"] == 2
    finally:
        env.close()


def test_unknown_name_lists_the_family() -> None:
    with pytest.raises(UnknownEnvError, match="mujoco_halfcheetah"):
        make_mujoco_env("mujoco_cheetah")


def test_rgb_frames_render_headless() -> None:
    if choose_headless_gl() is None:
        pytest.skip("no EGL or OSMesa library on this machine")
    env = make_mujoco_env("mujoco_hopper", cfg=AttrDict(mujoco_render_width=64, mujoco_render_height=48),
                          render_mode="rgb_array")  # fmt: skip
    try:
        env.reset(seed=0)
        frame = env.render()
        assert frame.shape == (48, 64, 3) and frame.std() > 0  # a real picture, not a blank buffer
    finally:
        env.close()


def test_mujoco_available_follows_the_installed_package(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mujoco_available() is True  # this module is skipped without mujoco
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mujoco" else real_find_spec(name)
    )
    assert mujoco_available() is False
