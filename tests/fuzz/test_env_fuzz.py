"""Env-interface fuzz: envs registered with ``register_env`` that break the Gymnasium contract, and custom models
that output NaN/inf.

Each contract case (seeded, ``family-seed`` ids) drives one split of envs through the real env runner
(``NonBatchedVectorEnvRunner``, as a rollout worker does) for three rollouts, with the once-per-rollout finiteness
check the rollout worker runs. A broken contract must raise :class:`EnvContractError` naming the env and what was
wrong; the handled variants (numpy scalars, 0/1 flags, castable observations) must train on. A few cases then run
end to end in serial mode: the run must end with FAILURE and the one clear message, without a traceback.
See docs/reliability.md, "What bad input gets".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from bad_envs import FAMILIES, BadEnv, draw_fault
from sf_run import run_script

from sample_factory.algo.sampling.non_batched_sampling import NonBatchedVectorEnvRunner
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.contract_errors import EnvContractError
from sample_factory.envs.env_contract import RolloutFiniteCheck
from sample_factory.envs.env_info import extract_env_info
from sample_factory.envs.env_utils import register_env

SEEDS_PER_FAMILY = 12
ROLLOUT = 8
ROLLOUTS = 3
NUM_ENVS = 2
DRIVER = str(Path(__file__).with_name("env_fuzz_driver.py"))


def _split(fault) -> NonBatchedVectorEnvRunner:
    reset_global_context()
    register_env("bad_env", lambda *args, **kwargs: BadEnv(fault))
    cfg = default_cfg(env="bad_env")
    cfg.rollout, cfg.seed, cfg.num_envs_per_worker, cfg.worker_num_splits = ROLLOUT, 1, NUM_ENVS, 1
    cfg.decorrelate_envs_on_one_worker = False  # the faults are drawn for sampled steps, not for random steps first
    env_info = extract_env_info(BadEnv(fault), cfg)
    return NonBatchedVectorEnvRunner(cfg, env_info, NUM_ENVS, 0, 0, None, "cpu", [None])


def _drive(split: NonBatchedVectorEnvRunner) -> None:
    """Init and step the split for a few rollouts, checking each finished rollout as the rollout worker does."""
    split.init()
    check = RolloutFiniteCheck("bad_env", {"rewards": split.traj["rewards"].numpy(),
                                           "obs": {k: v.numpy() for k, v in split.traj["obs"].items()}}, 1)  # fmt: skip
    for _ in range(ROLLOUTS):
        for _ in range(ROLLOUT):
            split.step(torch.zeros(NUM_ENVS, dtype=torch.int64))
        check.check(split.runner.state.slots, ROLLOUT, "rollout_w0 split 0")


CASES = [(family, seed) for family in FAMILIES for seed in range(SEEDS_PER_FAMILY)]


@pytest.mark.parametrize("family,seed", CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_bad_env_gets_a_clear_error_or_is_handled(family: str, seed: int) -> None:
    fault = draw_fault(family, seed)
    expected = FAMILIES[family][1]
    split = _split(fault)
    try:
        if expected is None:
            _drive(split)
            rewards = split.traj["rewards"]
            assert torch.isfinite(rewards).all() and (rewards != 0).any(), f"{fault}: nothing was trained on"
            return
        with pytest.raises(EnvContractError) as info:
            _drive(split)
        message = str(info.value)
        assert "'bad_env'" in message and expected in message, f"{fault}:\n{message}"
        assert len(message) < 600, "one message, not a dump"
    finally:
        if split.runner is not None:
            split.runner.close()
        reset_global_context()


def test_every_family_is_drawn_with_faults_at_reset_and_at_steps() -> None:
    ats = {draw_fault(f, s).at for f, s in CASES}
    assert {0, 1, 2} <= ats and max(ats) > 2
    assert len(CASES) >= 200


def test_a_contract_violation_is_not_recreated_away() -> None:
    """--env_error_behavior=recreate recreates envs that raise; a broken contract stops at once instead."""
    from sample_factory.algo.sampling.env_runner import EnvRecovery

    split = _split(draw_fault("step_arity", 0))
    split.cfg.env_error_behavior = "recreate"
    made = []
    try:
        split.init()
        split.runner.recovery = EnvRecovery(lambda i: made.append(i) or BadEnv(draw_fault("step_arity", 0)), 2)
        with pytest.raises(EnvContractError, match="step\\(\\) returns 5"):
            for _ in range(3):
                split.step(torch.zeros(NUM_ENVS, dtype=torch.int64))
        assert made == [], "no env was recreated"
    finally:
        split.runner.close()
        reset_global_context()


def test_the_checks_stop_after_the_first_steps() -> None:
    """Hot path: after CHECKED_STEPS steps the contract is no longer consulted on every step."""
    split = _split(draw_fault("reward_ok", 0))
    try:
        split.init()
        calls = []
        original = split.runner.contract.step_result
        split.runner.contract.step_result = lambda result: calls.append(1) or original(result)
        for _ in range(20):
            split.step(torch.zeros(NUM_ENVS, dtype=torch.int64))
        assert len(calls) == 2 * NUM_ENVS
    finally:
        split.runner.close()
        reset_global_context()


# ---- end to end: one driver process runs every case in serial mode
E2E_CASES = {
    "step_arity": "step() returns 5",
    "reset_bare_obs": "returns a pair (obs, info)",
    "late_reward_nan": "non-finite reward",
    "obs_missing_key": "without key",
    "model_nan": "produced non-finite action distribution parameters",
    "model_inf_continuous": "produced non-finite action distribution parameters",
    "action_space_text": "Text",
}


def test_bad_envs_and_models_end_the_run_with_one_clear_message(tmp_path) -> None:
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps({"train_dir": str(tmp_path), "cases": list(E2E_CASES)}))
    result = run_script(DRIVER, [str(cases_file)], timeout=60 + 20 * len(E2E_CASES))
    assert result.returncode == 0, result.explain()
    outcomes = dict(re.findall(r"^FUZZ_RESULT (\S+) (\S+)$", result.output, flags=re.MULTILINE))
    for case, expected in E2E_CASES.items():
        assert outcomes.get(case) == "1", f"{case}: status {outcomes.get(case)}\n{result.explain()}"
        assert expected in result.output, f"{case}: {expected!r} missing\n{result.explain()}"
    assert "Traceback" not in result.output, result.explain()
