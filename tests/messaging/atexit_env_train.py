"""A user script whose env registers an ``atexit`` handler, as wrappers of external simulators do to stop them.

Each env writes ``atexit_<pid>.txt`` into the folder named by the ``SF_TEST_MARKER_DIR`` environment variable when
its process exits normally.
Used by test_process_start.py: workers forked from the fork server must run those handlers like spawned ones.
"""

import atexit
import os
import sys

import gymnasium as gym

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl

MARKER_DIR = os.environ["SF_TEST_MARKER_DIR"]


def _write_marker() -> None:
    with open(os.path.join(MARKER_DIR, f"atexit_{os.getpid()}.txt"), "w") as f:
        f.write("ran\n")


def make_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    atexit.register(_write_marker)
    return gym.make("CartPole-v1", render_mode=render_mode)


def main() -> int:
    register_env("atexit_cartpole", make_env)
    parser, _ = parse_sf_args()
    return run_rl(parse_full_cfg(parser))


if __name__ == "__main__":
    sys.exit(main())
