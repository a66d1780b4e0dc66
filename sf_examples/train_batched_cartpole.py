"""Train on the numpy-vectorised CartPole through the batched sampler.

    python -m sf_examples.train_batched_cartpole --experiment=batched_cartpole

Each rollout worker holds one ``BatchedCartPole`` per split (``--num_envs_per_worker`` equals
``--worker_num_splits``), each simulating ``--batched_envs`` copies, and ``--batched_sampling=True`` makes the
sampler write all copies of a step with single indexed writes. Alone in its split the env is natively vectorised and
stepped as it is; with more envs per split they are stepped one after another like any other env. Compare its FPS
with ``python -m sf_examples.train_gym_env --env=CartPole-v1``, which steps Gymnasium envs one by one.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sample_factory.utils.typing import Config, StatusCode
from sf_examples.batched_cartpole import ENV_NAME, add_batched_cartpole_args, register_batched_cartpole
from sf_examples.entry_points import FamilyFlags, train_family
from sf_examples.gym.gym_utils import GYM_DEFAULTS

BATCHED_CARTPOLE_DEFAULTS: dict[str, Any] = {
    **GYM_DEFAULTS,  # the same small MLP and PPO settings as Gymnasium's CartPole-v1
    "env": ENV_NAME,
    "batched_sampling": True,
    # one vectorised env per split keeps its fast path (no stacking copies); two splits keep double buffering
    "num_envs_per_worker": 2,
    "worker_num_splits": 2,
    "num_workers": 2,
    # 2 workers x 2 envs x 64 copies x 32 steps = 8192 samples per round of rollouts = one training batch of
    # 4 minibatches (num_batches_per_epoch from GYM_DEFAULTS)
    "batch_size": 2048,
}


def batched_cartpole_override_defaults(parser: argparse.ArgumentParser) -> None:
    """Apply :data:`BATCHED_CARTPOLE_DEFAULTS`; explicit command-line flags still win."""
    parser.set_defaults(**BATCHED_CARTPOLE_DEFAULTS)


BATCHED_CARTPOLE_FLAGS = FamilyFlags(
    add_batched_cartpole_args, batched_cartpole_override_defaults, train_script="sf_examples.train_batched_cartpole"
)


def parse_batched_cartpole_args(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the batched CartPole's flags and defaults, then the strict final parse."""
    return BATCHED_CARTPOLE_FLAGS.parse(argv, evaluation)


def main() -> StatusCode:
    return train_family(register_batched_cartpole, parse_batched_cartpole_args)


if __name__ == "__main__":
    sys.exit(main())
