"""What the fast-path start-up checks (``model/fast_path_checks.py``) add to the start of a doom_basic run.

Each round starts fresh processes (a process's first convolutions cost far more than later ones, so a warm process
would hide most of the cost) and times, on the model of ``python -m sf_examples.vizdoom.train_vizdoom
--env=doom_basic --device=cpu`` (the family's encoder around the library's ``convnet_simple``, a GRU of 512):

- ``Learner.init()`` (model, channels-last, optimiser, flat Adam, fused loss), with 1 torch thread as the learner's
  process runs it by default;
- ``inference_fast_paths()``, the inference worker's decisions (inference mode, direct calls), on its eval-mode model;

once with the checks (the default) and once with ``SF_FORCE_FAST_PATHS=all``: the same tricks applied without their
checks. The difference is the checks' cost. ``--library_encoder`` leaves the family's encoder unregistered, so the
model is the library's own and no check runs at all. Rounds alternate the two settings. Not a test:

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
    from sample_factory.algo.sampling.inference_fast_paths import inference_fast_paths
    from sample_factory.algo.utils.env_info import obtain_env_info
    from sample_factory.model.actor_critic import create_actor_critic
    from sample_factory.model.model_utils import get_rnn_size
    from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg, register_vizdoom_envs, register_vizdoom_models

    register_vizdoom_envs()
    if not library_encoder:
        register_vizdoom_models()
    cfg = parse_vizdoom_cfg(["--env=doom_basic", "--device=cpu", "--experiment=fast_path_check_cost"])
    env_info = obtain_env_info(cfg)
    torch.set_num_threads(1)
    started = time.perf_counter()
    learner = Learner(cfg, env_info)
    learner.init()
    learner_s = time.perf_counter() - started
    model = create_actor_critic(cfg, env_info.obs_space, env_info.action_space).eval()
    started = time.perf_counter()
    inference_fast_paths(model, env_info.obs_space, get_rnn_size(cfg), torch.device("cpu"))
    return {"learner_init_s": learner_s, "inference_decisions_s": time.perf_counter() - started}


def run_child(forced: bool, library_encoder: bool) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("SF_FORCE_FAST_PATHS", None)
    if forced:
        env["SF_FORCE_FAST_PATHS"] = "all"
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
    results: dict[str, list[dict[str, float]]] = {"checked": [], "forced": []}
    for _ in range(args.rounds):
        for setting in ("checked", "forced"):
            results[setting].append(run_child(setting == "forced", args.library_encoder))
    for key in ("learner_init_s", "inference_decisions_s"):
        checked = [r[key] for r in results["checked"]]
        forced = [r[key] for r in results["forced"]]
        print(
            f"{key}: with checks median {statistics.median(checked):.3f} s {[round(x, 3) for x in checked]}; "
            f"forced (no checks) median {statistics.median(forced):.3f} s {[round(x, 3) for x in forced]}; "
            f"added {statistics.median(checked) - statistics.median(forced):.3f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
