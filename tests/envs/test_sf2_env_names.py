"""Sample Factory 2's env helpers at their SF2 paths: retry, reward shaping, training info, episode numbers,
image detection and PettingZoo's dict observations."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from sample_factory.envs.env_utils import (
    RewardShapingInterface,
    TrainingInfoInterface,
    find_training_info_interface,
    retry,
    set_reward_shaping,
    set_training_info,
)
from sample_factory.envs.env_wrappers import EpisodeCounterWrapper, has_image_observations
from sample_factory.envs.pettingzoo_envs import (
    PettingZooParallelEnv,
    all_equal,
    normalize_info,
    normalize_observation,
    normalize_observation_space,
)

from .fake_envs import ScriptedEnv

# ---- retry -----------------------------------------------------------------------------------------------------


def test_retry_calls_again_until_success_and_keeps_the_result() -> None:
    calls = []

    @retry(ConnectionError, num_attempts=3, sleep_time=0)
    def flaky(value: int) -> int:
        calls.append(value)
        if len(calls) < 3:
            raise ConnectionError("port busy")
        return value * 2

    assert flaky(21) == 42 and calls == [21, 21, 21]
    assert flaky.__name__ == "flaky"


def test_retry_gives_up_with_the_last_error_and_lets_other_errors_through() -> None:
    attempts = []

    @retry(ConnectionError, num_attempts=2, sleep_time=0)
    def always_fails() -> None:
        attempts.append(1)
        raise ConnectionError(f"attempt {len(attempts)}")

    with pytest.raises(ConnectionError, match="attempt 2"):
        always_fails()
    assert len(attempts) == 2

    @retry(ConnectionError, num_attempts=5, sleep_time=0)
    def wrong_kind() -> None:
        attempts.append(1)
        raise KeyError("not retried")

    attempts.clear()
    with pytest.raises(KeyError):
        wrong_kind()
    assert len(attempts) == 1
    with pytest.raises(ValueError, match="at least one attempt"):
        retry(num_attempts=0)


# ---- reward shaping and training info ----------------------------------------------------------------------------


class _ShapedEnv(ScriptedEnv, RewardShapingInterface, TrainingInfoInterface):
    def __init__(self) -> None:
        ScriptedEnv.__init__(self, obs_shape=(3,))
        TrainingInfoInterface.__init__(self)
        self.schemes: list[tuple[dict, int | slice]] = []

    def get_default_reward_shaping(self) -> dict:
        return {"kill": 1.0}

    def set_reward_shaping(self, reward_shaping: dict, agent_idx: int | slice) -> None:
        self.schemes.append((reward_shaping, agent_idx))


def test_set_reward_shaping_reaches_the_env_through_wrappers() -> None:
    inner = _ShapedEnv()
    wrapped = gym.wrappers.TimeLimit(EpisodeCounterWrapper(inner), max_episode_steps=10)
    assert set_reward_shaping(wrapped, {"kill": 2.5}, 1) is True
    assert inner.schemes == [({"kill": 2.5}, 1)]
    assert set_reward_shaping(ScriptedEnv(), {"kill": 2.5}, 0) is False  # nothing to shape: ignored


def test_set_training_info_passes_progress_and_ignores_none() -> None:
    inner = _ShapedEnv()
    interface = find_training_info_interface(EpisodeCounterWrapper(inner))
    set_training_info(interface, {"approx_total_training_steps": 1234})
    assert inner.training_info == {"approx_total_training_steps": 1234}
    set_training_info(None, {"approx_total_training_steps": 1})  # an env without the interface


# ---- wrappers ----------------------------------------------------------------------------------------------------


def test_episode_counter_numbers_finished_episodes_in_extra_stats() -> None:
    env = EpisodeCounterWrapper(ScriptedEnv(obs_shape=(2,), terminate_at=2))
    numbers = []
    for _ in range(3):
        env.reset()
        infos = [env.step(0)[4] for _ in range(2)]
        assert "episode_extra_stats" not in infos[0]
        numbers.append(infos[1]["episode_extra_stats"]["episode_number"])
    assert numbers == [1, 2, 3] and env.episode_count == 3


def test_episode_counter_keeps_the_envs_own_extra_stats() -> None:
    class _StatsEnv(ScriptedEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, True, truncated, {"episode_extra_stats": {"kills": 3.0}}

    env = EpisodeCounterWrapper(_StatsEnv(obs_shape=(2,)))
    env.reset()
    info = env.step(0)[4]
    assert info["episode_extra_stats"] == {"kills": 3.0, "episode_number": 1}


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        (spaces.Box(0, 255, (3, 84, 84), np.uint8), True),
        (spaces.Box(0, 255, (84, 84, 3), np.uint8), True),
        (spaces.Box(-1, 1, (8,), np.float32), False),
        (spaces.Box(-1, 1, (4, 5), np.float32), False),
        (spaces.Dict({"obs": spaces.Box(0, 255, (3, 8, 8), np.uint8), "m": spaces.Box(-1, 1, (2,))}), True),
        (spaces.Dict({"m": spaces.Box(0, 255, (3, 8, 8), np.uint8)}), False),
        (spaces.Discrete(4), False),
    ],
)
def test_has_image_observations(space: gym.Space, expected: bool) -> None:
    assert has_image_observations(space) is expected


# ---- PettingZoo ----------------------------------------------------------------------------------------------------


BOARD = spaces.Dict(
    {"observation": spaces.Box(0, 1, (3, 3, 2), np.int8), "action_mask": spaces.Box(0, 1, (9,), np.int8)}
)


def test_pettingzoo_normalizers() -> None:
    assert all_equal([]) and all_equal([3, 3, 3]) and not all_equal([3, 3, 4])
    assert all_equal([spaces.Discrete(2), spaces.Discrete(2)])

    normalized = normalize_observation_space(BOARD)
    assert sorted(normalized.spaces) == ["action_mask", "obs"] and normalized["obs"] == BOARD["observation"]
    box = spaces.Box(-1, 1, (4,))
    assert normalize_observation_space(box) is box

    board = np.ones((3, 3, 2), np.int8)
    obs = normalize_observation({"observation": board, "action_mask": np.zeros(9, np.int8)})
    assert sorted(obs) == ["action_mask", "obs"] and obs["obs"] is board
    assert normalize_observation(board) is board

    infos = {"p1": {"legal": 3}}
    info = normalize_info(infos, "p1")
    assert info == {"legal": 3}
    info["is_active"] = True
    assert infos["p1"] == {"legal": 3}, "the env's dict is not modified"
    assert normalize_info(infos, "p2") == {} and normalize_info(None, "p1") == {}


class _TurnBasedBoard:
    """Two players of a board game: dict observations; p0 leaves after one step, p1 after three."""

    metadata = {"name": "board_v0"}
    possible_agents = ["p0", "p1"]

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.t = 0

    def observation_space(self, agent):
        return BOARD

    def action_space(self, agent):
        return spaces.Discrete(9)

    def _obs(self):
        return {a: {"observation": np.full((3, 3, 2), self.t + 1, np.int8), "action_mask": np.ones(9, np.int8)}
                for a in self.agents}  # fmt: skip

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        ends = {a: self.t >= (1 if a == "p0" else 3) for a in self.agents}
        obs, infos = self._obs(), {a: {"turn": self.t} for a in self.agents}
        self.agents = [a for a in self.agents if not ends[a]]
        return obs, {a: 0.0 for a in ends}, ends, {a: False for a in ends}, infos


def test_pettingzoo_env_renames_board_observations_for_the_model() -> None:
    env = PettingZooParallelEnv(_TurnBasedBoard())
    assert sorted(env.observation_space.spaces) == ["action_mask", "obs"]
    obs, _ = env.reset()
    assert sorted(obs[0]) == ["action_mask", "obs"] and obs[0]["obs"].shape == (3, 3, 2)
    env.step([0, 0])
    obs, _, _, _, infos = env.step([0, 0])  # p0 has left: it sees zeros of every entry
    assert infos[0] == {"is_active": False} and infos[1] == {"turn": 2}
    assert not obs[0]["obs"].any() and not obs[0]["action_mask"].any()
