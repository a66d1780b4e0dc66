"""A small CartPole config for the sampler tests (2 workers x 2 envs, short rollouts)."""

from __future__ import annotations

from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

ROLLOUT = 8


def cartpole_sampling_cfg(tmp_path, experiment: str, *extra: str):
    """The parsed config with CartPole registered, as a user's sampling script would have it."""
    cfg = parse_gym_args(
        [
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            f"--rollout={ROLLOUT}",
            f"--train_dir={tmp_path}",
            f"--experiment={experiment}",
            *extra,
        ]
    )
    register_env_from_cfg(cfg)
    return cfg
