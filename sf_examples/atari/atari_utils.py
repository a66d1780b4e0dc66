"""``make_atari_env``: the factory registered for every ``atari_*`` name, with the standard DQN preprocessing.

Training stack (Mnih et al. 2015; Machado et al. 2018 for the terms), innermost first:

- ale-py's game with every frame (``frameskip=1``), grayscale screens, no sticky actions unless
  ``--atari_repeat_action_probability`` says otherwise, at most 108,000 frames (30 minutes) per game;
- up to 30 random no-ops after reset (:class:`NoopResetEnv`), so a deterministic game starts differently;
- ``--env_frameskip`` (4) repeats of each action, max-pooled over the last two frames (:class:`MaxAndSkipEnv`);
- game statistics: the whole game's raw score and length go to ``episode_extra_stats`` (``game_score``,
  ``game_length`` in TensorBoard) when a game ends;
- with ``--atari_episodic_life`` a lost life ends the episode for the learner (the game goes on);
- FIRE after reset for games that wait for it (:class:`FireResetEnv`);
- 84x84 frames (area interpolation), the last ``--env_framestack`` (4) stacked into a ``(4, 84, 84)`` uint8 image.

Rewards are clipped to [-1, 1] by the learner (``--reward_clip=1``), not here, so every reward the env returns and
every sum of them is a raw score. ``enjoy`` and ``sample_factory.eval`` play whole games (no episodic life), so their
episode rewards are game scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from sample_factory.envs.env_utils import UnknownEnvError, require_optional_module, unknown_env_message
from sample_factory.envs.env_wrappers import (
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
    ResizeWrapper,
    StackFramesWrapper,
    StepResult,
)
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config
from sf_examples.atari.atari_games import ATARI_ENVS

NOOP_MAX = 30
SCREEN_SIZE = 84
# what an env created without a cfg (a notebook, a test) uses; the same values as the family's defaults
FALLBACK_CFG: dict[str, Any] = {
    "env_frameskip": 4,
    "env_framestack": 4,
    "atari_episodic_life": True,
    "atari_repeat_action_probability": 0.0,
}


@dataclass(frozen=True)
class AtariSpec:
    """One ``atari_*`` env: its name, the ale-py id it plays and the frame limit of one game.

    ``default_timeout`` counts emulator frames per game; None keeps ale-py's own limit (108,000 frames, 30 minutes).
    """

    name: str
    env_id: str
    default_timeout: int | None = None


def atari_env_by_name(name: str) -> AtariSpec:
    """The spec of an ``atari_*`` name; UnknownEnvError naming the valid names otherwise."""
    return AtariSpec(name, atari_gym_id(name))


def atari_gym_id(env_name: str) -> str:
    """The ale-py id of an ``atari_*`` name; UnknownEnvError naming the valid names otherwise."""
    if env_name not in ATARI_ENVS:
        raise UnknownEnvError(unknown_env_message(env_name, sorted(ATARI_ENVS)))
    return ATARI_ENVS[env_name]


def _option(cfg: Config | None, name: str) -> Any:
    value = getattr(cfg, name, None) if cfg is not None else None
    return FALLBACK_CFG[name] if value is None else value


def is_evaluation_cfg(cfg: Config | None) -> bool:
    """True for the config of enjoy or eval: only the evaluation parser declares ``--max_num_episodes``.

    The saved config.json of the experiment (where ``atari_episodic_life`` is True) wins over defaults when a
    run is evaluated, so the evaluation stack is chosen by who asks rather than by that flag.
    """
    return cfg is not None and getattr(cfg, "max_num_episodes", None) is not None


class GameStatsWrapper(gym.Wrapper):
    """At the end of a whole game put its raw score and length into ``info["episode_extra_stats"]``.

    Sits below :class:`EpisodicLifeEnv`, so it sees games, not lives: Sample Factory's own episode reward is
    then the score of one life, and ``game_score`` the score of the game. It writes no ``info["episode"]``, so
    ``--use_record_episode_statistics`` (a family default, as in Sample Factory 2) leaves the reported episode one
    life, which is what Sample Factory 2.1.1's Atari runs report during training too.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.score, self.length = 0.0, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self.score, self.length = 0.0, 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.score += float(reward)
        self.length += int(info.get("num_frames", 1))
        if terminated or truncated:
            info = dict(info)
            extra = dict(info.get("episode_extra_stats", {}))
            extra.update(game_score=self.score, game_length=self.length)
            info["episode_extra_stats"] = extra
            self.score, self.length = 0.0, 0
        return obs, reward, terminated, truncated, info


def make_ale_env(gym_id: str, cfg: Config | None, render_mode: str | None, max_frames: int | None = None) -> gym.Env:
    """ale-py's game at every frame; grayscale observations (rendering still gives colour frames)."""
    ale_py = require_optional_module("ale_py", extra="atari", what="Atari envs")
    gym.register_envs(ale_py)
    limit = {} if max_frames is None else {"max_num_frames_per_episode": int(max_frames)}
    return gym.make(
        gym_id,
        **limit,
        obs_type="grayscale",
        frameskip=1,
        repeat_action_probability=float(_option(cfg, "atari_repeat_action_probability")),
        full_action_space=False,
        render_mode=render_mode,
    )


def wrap_atari_env(env: gym.Env, cfg: Config | None, whole_games: bool) -> gym.Env:
    """The preprocessing of the module docstring on a grayscale ale-py env."""
    env = NoopResetEnv(env, noop_max=NOOP_MAX)
    frameskip = int(_option(cfg, "env_frameskip"))
    if frameskip > 1:
        env = MaxAndSkipEnv(env, skip=frameskip)
    env = GameStatsWrapper(env)
    if bool(_option(cfg, "atari_episodic_life")) and not whole_games:
        env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireResetEnv(env)
    env = ResizeWrapper(env, SCREEN_SIZE, SCREEN_SIZE, area_interpolation=True)
    framestack = int(_option(cfg, "env_framestack"))
    return StackFramesWrapper(env, framestack) if framestack > 1 else _with_channel_axis(env)


def _with_channel_axis(env: gym.Env) -> gym.Env:
    """``(84, 84)`` -> ``(1, 84, 84)`` when nothing is stacked: the conv encoders want CHW."""
    return StackFramesWrapper(env, 1)


def make_atari_env(
    env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> gym.Env:
    """The ``make_env_func`` of every ``atari_*`` env (module level: worker processes unpickle it by reference)."""
    del env_config  # seeding comes from reset(seed=...), which the rollout worker calls per env
    spec = atari_env_by_name(env_name)
    env = make_ale_env(spec.env_id, cfg, render_mode, spec.default_timeout)
    return wrap_atari_env(env, cfg, whole_games=is_evaluation_cfg(cfg))
