"""What the fast-path start-up checks (``model/fast_path_checks.py``) add to the start of a doom_basic run.

Each round starts a fresh process (a process's first convolutions cost far more than later ones, so a warm process
would hide most of the cost) and times, on the model of ``python -m sf_examples.vizdoom.train_vizdoom
--env=doom_basic --device=cpu`` (the family's encoder around the library's ``convnet_simple``, a GRU of 512), with
1 torch thread as the learner's process runs by default:

- ``Learner.init()`` (model, channels-last, optimiser, flat Adam, fused loss) and, inside it, the time spent in the
  checks (``fast_path_checks.run_check``: deep copies, dummy batch, the compared passes);
- the inference worker's decisions (``inference_fast_paths``: inference mode, direct calls) and the checks in them.

``--library_encoder`` leaves the family's encoder unregistered: the model is then the library's own and no check
runs. Not a test (load from other processes moves the figures; compare medians):

    python bench/fast_path_check_cost.py --rounds=5
    python bench/fast_path_check_cost.py --rounds=5 --library_encoder
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def measure(library_encoder: bool) -> dict[str, float]:
    """One child's timings (seconds)."""
    import torch

    from sample_factory.algo.learning.learner import Learner
    from sample_factory.algo.sampling import inference_fast_paths as inference_module
    from sample_factory.envs.env_info import obtain_env_info
    from sample_factory.model import fast_path_checks
    from sample_factory.model.actor_critic import create_actor_critic
    from sample_factory.model.model_utils import get_rnn_size
    from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg, register_vizdoom_envs, register_vizdoom_models

    register_vizdoom_envs()
    if not library_encoder:
        register_vizdoom_models()
    cfg = parse_vizdoom_cfg(["--env=doom_basic", "--device=cpu", "--experiment=fast_path_check_cost"])
    env_info = obtain_env_info(cfg)
    torch.set_num_threads(1)
    in_checks = [0.0]
    run_check = fast_path_checks.run_check

    def timed_run_check(check, device):
        started = time.perf_counter()
        try:
            return run_check(check, device)
        finally:
            in_checks[0] += time.perf_counter() - started

    # decide() finds run_check among its module's globals; the inference decisions imported it by name
    fast_path_checks.run_check = inference_module.run_check = timed_run_check
    started = time.perf_counter()
    learner = Learner(cfg, env_info)
    learner.init()
    timings = {"learner_init_s": time.perf_counter() - started, "learner_checks_s": in_checks[0]}
    in_checks[0] = 0.0
    model = create_actor_critic(cfg, env_info.obs_space, env_info.action_space).eval()
    started = time.perf_counter()
    inference_module.inference_fast_paths(model, env_info.obs_space, get_rnn_size(cfg), torch.device("cpu"))
    timings.update(inference_decisions_s=time.perf_counter() - started, inference_checks_s=in_checks[0])
    return timings


def run_child(library_encoder: bool) -> dict[str, float]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SF_")}
    args = [sys.executable, __file__, "--child"] + (["--library_encoder"] if library_encoder else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--library_encoder", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.library_encoder)))
        return 0
    rounds = [run_child(args.library_encoder) for _ in range(args.rounds)]
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(f"{key}: median {statistics.median(values):.3f} s, rounds {[round(v, 3) for v in values]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
