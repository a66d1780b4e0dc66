"""The atari_* envs in-process: the 57-game table, the preprocessing, and whole games for evaluation."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.sampling.env_runner import EpisodeStats
from sample_factory.envs.env_utils import UnknownEnvError
from sample_factory.envs.env_wrappers import EpisodicLifeEnv, MaxAndSkipEnv, NoopResetEnv
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.atari.atari_games import ATARI_57_GAMES, ATARI_ENVS
from sf_examples.atari.atari_utils import make_atari_env

REQUIRED = ("atari_breakout", "atari_pong", "atari_beamrider", "atari_qbert", "atari_spaceinvaders",
            "atari_seaquest", "atari_montezuma")  # fmt: skip
EVAL_CFG = AttrDict(max_num_episodes=10**9)  # what the evaluation parser adds to every enjoy/eval cfg


def _wrappers(env: gym.Env) -> list[type]:
    found = []
    while isinstance(env, gym.Wrapper):
        found.append(type(env))
        env = env.env
    return found


def test_table_has_57_games_with_unique_names_registered_by_ale_py() -> None:
    import ale_py

    gym.register_envs(ale_py)
    assert len(ATARI_57_GAMES) == len(set(ATARI_57_GAMES)) == 57
    assert len(ATARI_ENVS) == 57 and set(REQUIRED) <= set(ATARI_ENVS)
    assert ATARI_ENVS["atari_montezuma"] == "ALE/MontezumaRevenge-v5"
    assert all(gym_id in gym.envs.registry for gym_id in ATARI_ENVS.values())


@pytest.mark.parametrize("env_name", REQUIRED)
def test_standard_observation_and_steps(env_name: str) -> None:
    env = make_atari_env(env_name)
    try:
        assert env.observation_space.shape == (4, 84, 84) and env.observation_space.dtype == np.uint8
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 84, 84)
        _, _, _, _, info = env.step(0)
        assert info["num_frames"] == 4  # frameskip 4, max-pooled
    finally:
        env.close()


def test_training_stack_order() -> None:
    env = make_atari_env("atari_breakout")
    try:
        chain = _wrappers(env)
        noop, skip, life = chain.index(NoopResetEnv), chain.index(MaxAndSkipEnv), chain.index(EpisodicLifeEnv)
        assert life < skip < noop  # outermost first: lives end episodes on top of skipped, no-op-started frames
    finally:
        env.close()


def _play(env: gym.Env, steps: int) -> tuple[int, list[dict]]:
    """Random play; returns (episodes ended, game stats seen)."""
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    ended, games = 0, []
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            ended += 1
            if "episode_extra_stats" in info:
                games.append(info["episode_extra_stats"])
            env.reset()
    return ended, games


def test_training_episodes_are_lives_and_game_scores_are_reported() -> None:
    env = make_atari_env("atari_breakout", cfg=AttrDict(env_frameskip=4, env_framestack=4))
    try:
        ended, games = _play(env, 1500)
    finally:
        env.close()
    assert games, "random Breakout play ends a game within 6000 frames"
    assert ended >= 4 * len(games)  # five lives per game
    assert all(g["game_length"] > 0 and g["game_score"] >= 0 for g in games)


def test_with_recorded_statistics_the_reported_episode_is_still_one_life() -> None:
    """``--use_record_episode_statistics`` (a family default) finds no ``info["episode"]``: episodes are lives."""
    env = make_atari_env("atari_breakout", cfg=AttrDict(env_frameskip=4, env_framestack=4))
    stats = EpisodeStats(1, env_episode_stats=True)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    life_scores, score = [], 0.0
    try:
        for _ in range(600):
            _, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
            stats.reward[0] += reward
            stats.length[0] += 1
            score += reward
            if terminated or truncated:
                assert "episode" not in info
                stats.episode_done(0, 0, info)
                life_scores.append(score)
                score = 0.0
                env.reset()
    finally:
        env.close()
    assert len(life_scores) >= 2
    assert [reward for _, reward, *_ in stats.finished] == life_scores


def test_evaluation_plays_whole_games() -> None:
    env = make_atari_env("atari_breakout", cfg=EVAL_CFG)
    try:
        assert EpisodicLifeEnv not in _wrappers(env)
        ended, games = _play(env, 1500)
    finally:
        env.close()
    assert ended == len(games) > 0


def test_sticky_actions_flag_reaches_the_emulator() -> None:
    env = make_atari_env("atari_pong", cfg=AttrDict(atari_repeat_action_probability=0.25))
    try:
        assert env.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(0.25)
    finally:
        env.close()


def test_unknown_name_lists_the_family() -> None:
    with pytest.raises(UnknownEnvError, match="atari_breakout"):
        make_atari_env("atari_brekout")


@pytest.mark.slow
@pytest.mark.parametrize("env_name", sorted(set(ATARI_ENVS) - set(REQUIRED)))
def test_every_game_starts(env_name: str) -> None:
    env = make_atari_env(env_name)
    try:
        obs, _ = env.reset(seed=0)
        for _ in range(5):
            obs, *_ = env.step(0)
        assert obs.shape == (4, 84, 84)
    finally:
        env.close()
