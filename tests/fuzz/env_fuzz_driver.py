"""Runs the end-to-end cases of the env fuzz in one process, each a tiny serial-mode run.

``python tests/fuzz/env_fuzz_driver.py CASES.json`` (``{"train_dir": ..., "cases": [names]}``). A case is a fault
family of ``bad_envs.py``, or ``model_nan`` / ``model_inf_continuous`` (a custom encoder registered with the public
model factory whose features are NaN / inf), or ``action_space_text`` (an env with an action space the library
cannot sample). One line ``FUZZ_RESULT <case> <exit status>`` per case; an exception escaping ``run_rl`` prints
its traceback and reports ``crash``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), HERE]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from bad_envs import BadEnv, draw_fault  # noqa: E402
from gymnasium import spaces  # noqa: E402

from sample_factory.algo.utils.context import global_model_factory, reset_global_context  # noqa: E402
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args  # noqa: E402
from sample_factory.envs.env_utils import register_env  # noqa: E402
from sample_factory.model.encoder import Encoder  # noqa: E402
from sample_factory.train import run_rl  # noqa: E402


class NonFiniteEncoder(Encoder):
    """Features of one constant value (NaN or inf) whatever the observation: a broken custom model."""

    def __init__(self, cfg, obs_space, value: float) -> None:
        super().__init__(cfg)
        self.value = value
        self.scale = torch.nn.Parameter(torch.ones(8))

    def forward(self, obs_dict) -> torch.Tensor:
        obs = obs_dict["obs"]
        return torch.full((obs.shape[0], 8), self.value) * self.scale

    def get_out_size(self) -> int:
        return 8


def _register(case: str) -> None:
    reset_global_context()
    if case == "model_nan":
        register_env("fuzz_env", lambda *a, **k: BadEnv(draw_fault("reward_ok", 0)))
        global_model_factory().register_encoder_factory(lambda cfg, space: NonFiniteEncoder(cfg, space, np.nan))
    elif case == "model_inf_continuous":
        box = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        register_env("fuzz_env", lambda *a, **k: BadEnv(draw_fault("reward_ok", 0), action_space=box))
        global_model_factory().register_encoder_factory(lambda cfg, space: NonFiniteEncoder(cfg, space, np.inf))
    elif case == "action_space_text":
        register_env("fuzz_env", lambda *a, **k: BadEnv(draw_fault("reward_ok", 0), action_space=spaces.Text(5)))
    else:
        register_env("fuzz_env", lambda *a, **k: BadEnv(draw_fault(case, 0)))


def _run(case: str, train_dir: str) -> int:
    _register(case)
    argv = [
        "--env=fuzz_env", f"--train_dir={train_dir}", f"--experiment={case}", "--device=cpu", "--serial_mode=True",
        "--num_workers=1", "--num_envs_per_worker=2", "--rollout=8", "--batch_size=32", "--use_rnn=False",
        "--train_for_env_steps=400", "--decorrelate_experience_max_seconds=0", "--log_to_file=False",
        "--env_error_behavior=recreate",
    ]  # fmt: skip
    parser, _ = parse_sf_args(argv)
    return run_rl(parse_full_cfg(parser, argv))


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    for case in spec["cases"]:
        try:
            status = _run(case, spec["train_dir"])
        except Exception:  # noqa: BLE001  (an escape is what the fuzz looks for: report it, go on)
            traceback.print_exc()
            status = "crash"
        print(f"FUZZ_RESULT {case} {status}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
