"""Sample Factory 2's names of the EnvPool families: wrappers on a scripted batched env, specs, hooks, factories."""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.launcher.run_description import RunDescription
from sf_examples.envpool.atari.envpool_atari_params import (
    ENVPOOL_ATARI_DEFAULTS,
    add_atari_env_args,
    atari_override_defaults,
)
from sf_examples.envpool.atari.envpool_atari_utils import atari_env_by_name, make_atari_env
from sf_examples.envpool.envpool_utils import add_envpool_common_args, envpool_available
from sf_examples.envpool.envpool_wrappers import (
    BatchedRecordEpisodeStatistics,
    EnvPoolResetFixWrapper,
    has_image_observations,
)
from sf_examples.envpool.mujoco.envpool_mujoco_params import (
    ENVPOOL_MUJOCO_DEFAULTS,
    add_mujoco_envpool_env_args,
    mujoco_envpool_override_defaults,
)
from sf_examples.envpool.mujoco.envpool_mujoco_utils import make_mujoco_env, mujoco_env_by_name


class Batched(gym.Env):
    """Three envs; env ``i`` ends an episode every ``i + 1`` steps with reward ``i + 1`` per step. ``reset()``
    takes no arguments and returns observations only, as old EnvPool releases did."""

    observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = np.zeros(3, dtype=np.int64)

    def reset(self):  # noqa: D102 - the old signature on purpose
        self.t[:] = 0
        return np.zeros((3, 2))

    def step(self, action):
        self.t += 1
        done = self.t % np.arange(1, 4) == 0
        return np.zeros((3, 2)), np.arange(1.0, 4.0), done, np.zeros(3, bool), {}


def test_has_image_observations() -> None:
    assert has_image_observations(gym.spaces.Box(0, 255, (4, 84, 84), np.uint8))
    assert not has_image_observations(gym.spaces.Box(-1, 1, (17,), np.float32))
    assert not has_image_observations(gym.spaces.Discrete(3))


def test_reset_fix_accepts_seed_and_returns_info() -> None:
    env = EnvPoolResetFixWrapper(Batched())
    obs, info = env.reset(seed=3, options={})
    assert obs.shape == (3, 2) and info == {}


def test_batched_episode_statistics() -> None:
    env = BatchedRecordEpisodeStatistics(EnvPoolResetFixWrapper(Batched()), num_envs=3, deque_size=4)
    env.reset()
    _, _, _, _, info = env.step(None)
    assert info["episode"]["r"].tolist() == [1.0, 0.0, 0.0] and info["_episode"].tolist() == [True, False, False]
    _, _, _, _, info = env.step(None)
    assert info["episode"]["r"].tolist() == [1.0, 4.0, 0.0] and info["episode"]["l"].tolist() == [1, 2, 0]
    _, _, _, _, info = env.step(None)
    assert list(env.return_queue) == [1.0, 4.0, 1.0, 9.0], "the last 4 finished episodes, oldest first"
    assert list(env.length_queue) == [1, 2, 1, 3]


def test_specs_accept_both_spellings() -> None:
    assert atari_env_by_name("atari_breakout") == atari_env_by_name("envpool_atari_breakout")
    assert atari_env_by_name("atari_breakout").env_id == "Breakout-v5"
    assert mujoco_env_by_name("mujoco_ant").env_id == "Ant-v5"
    with pytest.raises(UnknownEnvError, match="envpool_atari_breakout"):
        atari_env_by_name("atari_brekout")
    with pytest.raises(UnknownEnvError, match="envpool_mujoco_ant"):
        make_mujoco_env("mujoco_antt")


def test_flag_hooks() -> None:
    parser = argparse.ArgumentParser()
    add_atari_env_args("atari_pong", parser)
    atari_override_defaults("atari_pong", parser)
    assert parser.parse_args([]).env_agents == 64
    assert parser.get_default("encoder_conv_architecture") == ENVPOOL_ATARI_DEFAULTS["encoder_conv_architecture"]
    parser = argparse.ArgumentParser()
    add_mujoco_envpool_env_args("mujoco_ant", parser)
    mujoco_envpool_override_defaults("mujoco_ant", parser)
    key = next(iter(ENVPOOL_MUJOCO_DEFAULTS))
    assert parser.get_default(key) == ENVPOOL_MUJOCO_DEFAULTS[key]
    add_envpool_common_args("x", parser2 := argparse.ArgumentParser())
    assert parser2.parse_args(["--env_agents=8"]).env_agents == 8


@pytest.mark.skipif(not envpool_available(), reason="needs envpool")
def test_make_atari_env_with_sf2_name() -> None:
    from sample_factory.utils.attr_dict import AttrDict

    env = make_atari_env("atari_pong", AttrDict(env_agents=2, envpool_num_threads=1), None, None)
    try:
        obs, _ = env.reset()
        assert obs.shape[0] == 2 and env.num_agents == 2
    finally:
        env.close()


def test_mujoco_envpool_run_description() -> None:
    from sf_examples.envpool.mujoco.experiments.mujoco_envpool import RUN_DESCRIPTION

    assert isinstance(RUN_DESCRIPTION, RunDescription)
    commands = RUN_DESCRIPTION.generate_experiments("/tmp/train_dir")
    assert len(commands) == 33 and "train_envpool_mujoco" in commands[0].cmd
