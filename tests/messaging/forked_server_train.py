"""A user script whose ``main()`` changes module globals before training, then trains twice in one process.

Each env writes ``seen_<pid>.txt`` into the folder named by ``SF_TEST_MARKER_DIR``: the values of this script's
``SETTING`` and of ``forked_server_helper.SETTING`` as the env's process sees them. After each run the script
prints the fork server's pid (``SERVER <pid or None>``) and, while training, the pid that served (``SERVED``).
Used by test_forked_server.py: a worker must see the user's modules as a new interpreter imports them, whichever
fork server it came from, and a server forked for a run must end with it.
"""

import os
import sys
from multiprocessing import forkserver

import forked_server_helper
import gymnasium as gym

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl

SETTING = "as imported"
MARKER_DIR = os.environ["SF_TEST_MARKER_DIR"]


def make_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    with open(os.path.join(MARKER_DIR, f"seen_{os.getpid()}.txt"), "w") as f:
        f.write(f"{SETTING}|{forked_server_helper.SETTING}|{os.getppid()}\n")
    return gym.make("CartPole-v1", render_mode=render_mode)


def main() -> int:
    global SETTING
    SETTING = "changed by main"
    forked_server_helper.SETTING = "changed by main"
    register_env("user_cartpole", make_env)
    for run in range(int(os.environ.get("SF_TEST_RUNS", "1"))):
        parser, _ = parse_sf_args()
        cfg = parse_full_cfg(parser)
        cfg.experiment = f"{cfg.experiment}_{run}"
        status = run_rl(cfg)
        print(f"SERVER {forkserver._forkserver._forkserver_pid}", flush=True)
        if status != 0:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
