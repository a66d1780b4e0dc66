"""Shared helpers of the lifecycle tests: log capture, fake experiments, CartPole training arguments."""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import torch

from sample_factory.cfg.arguments import default_cfg, parse_full_cfg, parse_sf_args
from sample_factory.cfg.experiment_files import save_config
from sample_factory.model.actor_critic import ActorCritic, create_actor_critic
from sample_factory.utils.logging_setup import log
from sample_factory.utils.utils import checkpoint_dir

TRAIN = "sf_examples.train_gym_env"
CARTPOLE = ["--env=CartPole-v1", "--device=cpu", "--num_workers=2", "--num_envs_per_worker=4", "--seed=1"]


def cartpole_args(train_dir: Path, experiment: str, steps: int, *extra: str) -> list[str]:
    return [
        *CARTPOLE,
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
        f"--train_for_env_steps={steps}",
        *extra,
    ]


class LogCapture(logging.Handler):
    """Collects the package logger's messages (it does not propagate, so pytest's caplog cannot see them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def text(self) -> str:
        return "\n".join(self.messages)


@contextmanager
def captured_log() -> Iterator[LogCapture]:
    handler = LogCapture()
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)


@functools.lru_cache(maxsize=4)
def _defaults(env: str) -> object:
    return default_cfg(env=env)


def eval_cfg(env: str, train_dir: Path, experiment: str, *extra: str):
    """A config as ``enjoy``/``eval``/``export`` scripts parse it (with the evaluation-only flags)."""
    argv = [f"--env={env}", f"--train_dir={train_dir}", f"--experiment={experiment}", *extra]
    parser, _ = parse_sf_args(argv, evaluation=True)
    return parse_full_cfg(parser, argv)


def fake_experiment(
    train_dir: Path, experiment: str, env: str, obs_space: gym.Space, action_space: gym.Space, **overrides
) -> tuple[object, ActorCritic]:
    """config.json plus one checkpoint holding a fresh model whose normalisers saw some random observations."""
    cfg = copy.deepcopy(_defaults(env))
    cfg.train_dir, cfg.experiment, cfg.device = str(train_dir), experiment, "cpu"
    for key, value in overrides.items():
        setattr(cfg, key, value)
    save_config(cfg)
    torch.manual_seed(0)
    model = create_actor_critic(cfg, obs_space, action_space)
    model.train()
    for _ in range(3):  # non-trivial normaliser statistics, so an export that drops them would be caught
        model.normalize_obs({k: _random_obs(s, 16) for k, s in model.obs_space.spaces.items()})
    model.eval()
    state = {"model": model.state_dict(), "train_step": 1, "env_steps": 100, "policy_version": 1}
    torch.save(state, Path(checkpoint_dir(cfg, 0)) / "checkpoint_000000001_100.pth")
    return cfg, model


def _random_obs(space: gym.spaces.Box, batch: int) -> torch.Tensor:
    if space.dtype == "uint8":
        return torch.randint(0, 256, (batch, *space.shape), dtype=torch.uint8)
    return torch.randn(batch, *space.shape) * 3 + 1


def random_obs(model: ActorCritic, batch: int) -> dict[str, torch.Tensor]:
    return {key: _random_obs(space, batch) for key, space in model.obs_space.spaces.items()}
