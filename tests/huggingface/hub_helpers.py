"""Experiment folders for the Hub tests, written the way training writes them (config.json, checkpoints, log)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import gymnasium as gym
import torch

from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.experiment_files import save_config
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.utils import checkpoint_dir

ENV = "CartPole-v1"
# a small model: the library's default layer sizes make orthogonal initialisation take seconds on a busy CI machine
SMALL_MODEL = {"encoder_mlp_layers": [32, 32], "rnn_size": 32}


@functools.lru_cache(maxsize=1)
def _cartpole_defaults() -> object:
    return default_cfg(env=ENV)


def make_experiment(
    train_dir: Path, name: str, num_policies: int = 1, cli_args: dict | None = None, **overrides: object
) -> Path:
    """A CartPole experiment with config.json and one checkpoint per policy (train step 7, 1400 env steps).

    The saved config is the library's defaults with a small model, ``overrides`` on top; ``cli_args`` is what it
    records as typed on the training command line.
    """
    cfg = copy.deepcopy(_cartpole_defaults())
    cfg.train_dir, cfg.experiment, cfg.device, cfg.num_policies = str(train_dir), name, "cpu", num_policies
    cfg.cli_args = {"env": ENV, "experiment": name, **(cli_args or {})}
    for key, value in {**SMALL_MODEL, **overrides}.items():
        setattr(cfg, key, value)
    save_config(cfg)
    env = gym.make(ENV)
    for policy_id in range(num_policies):
        write_checkpoint(cfg, policy_id, "checkpoint_000000007_1400.pth", seed=policy_id, env=env)
    return Path(train_dir) / name


def write_checkpoint(cfg: object, policy_id: int, file_name: str, seed: int, env: gym.Env | None = None) -> Path:
    """A checkpoint as the learner saves it: a model state dict (random weights from ``seed``) and counters."""
    env = env or gym.make(ENV)
    torch.manual_seed(seed)
    model = create_actor_critic(cfg, env.observation_space, env.action_space)
    state = {"model": model.state_dict(), "train_step": 7, "policy_version": 7}
    path = Path(checkpoint_dir(cfg, policy_id)) / file_name
    torch.save(state, path)
    return path
