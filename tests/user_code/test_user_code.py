"""User-code conformance: users' own envs and model modules, in Sample Factory 2's documented styles, train in serial
and in parallel mode and are enjoyed, whatever speed tricks the library applies.

Each case (``user_cases.CASES``) runs once, as its own process (``user_script.py``: parallel training, serial
training, enjoy of both checkpoints); the tests below check what each phase left behind and the log lines saying
which fast path each component used or skipped (``sample_factory.model.fast_path_checks``). With a fast path forced
on where it does not hold (``SF_FORCE_FAST_PATHS=channels_last`` or ``=direct_calls``) the cases that need the plain
path fail; see ``docs/learner.md``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from sf_run import RunResult, run_python
from tb_events import read_scalars
from torch_paths import CPU_FUSED_ADAM, PRIVATE_PATHS
from user_cases import CASES, COMMON_DEFAULTS
from user_script import ENJOY_EPISODES

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_TIMEOUT_S = 270
MODES = ("serial", "parallel")
LIBRARY_ONLY = "(every module of the model is the library's own)"
PASSED = "it passed the start-up check"

# Lines each training phase must log (both modes): which fast path the learner and the inference worker used or
# skipped for the case's modules, and why.
EXPECTED_LINES = {
    "view_conv_encoder": [
        "Learner: channels-last skipped for encoder ViewConvEncoder: its forward fails on NHWC tensors "
        "(RuntimeError: view size is not compatible with input tensor's size and stride",
        f"Learner: flat Adam used for encoder ViewConvEncoder: {PASSED}",
        f"Inference worker: direct calls used for encoder ViewConvEncoder: {PASSED}",
    ],
    "inplace_activations": [f"Learner: channels-last used for encoder InplaceConvEncoder: {PASSED}"],
    "dict_obs_per_key_encoders": [f"Learner: channels-last used for encoder PerKeyEncoder: {PASSED}"],
    "custom_core_extra_params": [f"Learner: flat Adam used for encoder SizedMlpEncoder, core GruCore: {PASSED}"],
    "custom_decoder_positional_env": [
        f"Learner: flat Adam used for actor_decoder NormedDecoder, critic_decoder NormedDecoder: {PASSED}"
    ],
    "whole_actor_critic": [
        f"Learner: fused PPO loss used for actor-critic WholeActorCritic: {PASSED}",
        f"Inference worker: inference mode used for actor-critic WholeActorCritic: {PASSED}",
    ],
    "custom_action_parameterization": [
        f"Learner: fused PPO loss used for actor-critic TemperatureActorCritic: {PASSED}",
        f"Learner: flat Adam used for actor-critic TemperatureActorCritic: {PASSED}",
    ],
    "multi_agent_view_conv": [
        "Learner: channels-last skipped for encoder ViewConvEncoder: its forward fails on NHWC tensors",
    ],
    "observers_and_summaries": [
        f"Learner: channels-last used {LIBRARY_ONLY}",
        f"Learner: fused PPO loss used {LIBRARY_ONLY}",
        f"Inference worker: inference mode used {LIBRARY_ONLY}",
        f"Inference worker: direct calls used {LIBRARY_ONLY}",
    ],
    "registered_action_distribution": [f"Inference worker: inference mode used {LIBRARY_ONLY}"],
    "call_override_and_hook": [
        "Inference worker: direct calls skipped for encoder DictCallEncoder: DictCallEncoder overrides __call__; "
        "decoder HookedDecoder: it has a forward pre-hook (the other modules call forward directly)",
    ],
}
EXTRA_FLAGS = {"custom_core_extra_params": ["--user_hidden_size=24"]}
_PHASE_RE = re.compile(r"^=== (train|enjoy) (serial|parallel)$", re.MULTILINE)
_REWARD_RE = re.compile(r"Avg episode reward: \[\(0, '([^']+)'\)")


@dataclass
class CaseRun:
    name: str
    train_dir: Path
    result: RunResult

    def phase(self, kind: str, mode: str) -> str:
        """The output between ``=== kind mode`` and its status line."""
        output = self.result.output
        start = output.find(f"=== {kind} {mode}\n")
        end = output.find(f"=== {kind} {mode} status", start)
        assert start >= 0 and end >= 0, f"no complete {kind} {mode} phase\n{self.result.explain()}"
        return output[start:end]

    def experiment(self, mode: str) -> Path:
        return self.train_dir / f"{self.name}_{mode}"


@pytest.fixture(scope="module", params=sorted(CASES))
def case_run(request, tmp_path_factory) -> CaseRun:
    name = request.param
    train_dir = tmp_path_factory.mktemp(name)
    script = os.path.join(HERE, "user_script.py")
    result = run_python([script, name, f"--train_dir={train_dir}", *EXTRA_FLAGS.get(name, [])], RUN_TIMEOUT_S)
    return CaseRun(name, train_dir, result)


def test_every_phase_succeeds(case_run: CaseRun) -> None:
    assert case_run.result.returncode == 0, case_run.result.explain()
    assert len(_PHASE_RE.findall(case_run.result.output)) == 4, case_run.result.explain()


@pytest.mark.parametrize("mode", MODES)
def test_training_collects_its_budget_writes_a_checkpoint_with_finite_rewards(case_run: CaseRun, mode: str) -> None:
    output = case_run.phase("train", mode)
    collected = re.findall(r"Collected \{0: (\d+)\}", output)
    assert collected and int(collected[-1]) >= COMMON_DEFAULTS["train_for_env_steps"], output[-3000:]
    assert list((case_run.experiment(mode) / "checkpoint_p0").glob("checkpoint_*.pth")), output[-3000:]
    rewards = [float(r) for r in _REWARD_RE.findall(output)]
    assert rewards and all(math.isfinite(r) for r in rewards), output[-3000:]


@pytest.mark.parametrize("mode", MODES)
def test_enjoy_plays_the_episodes_asked_for(case_run: CaseRun, mode: str) -> None:
    output = case_run.phase("enjoy", mode)
    assert output.count("Episode finished: reward=") >= ENJOY_EPISODES, output[-3000:]
    assert "Avg episode reward: " in output, output[-3000:]


@pytest.mark.parametrize("mode", MODES)
def test_the_log_says_which_fast_paths_were_used_or_skipped(case_run: CaseRun, mode: str) -> None:
    output = case_run.phase("train", mode)
    if PRIVATE_PATHS:
        expected = EXPECTED_LINES[case_run.name]
    else:  # hooks cannot be read: no module is taken for the library's own, each trick goes through its check
        expected = ["torch's private paths are off (torch "]
        assert LIBRARY_ONLY not in output, _fast_path_lines(output)
    if not CPU_FUSED_ADAM:
        expected = [line for line in expected if "flat Adam" not in line]
        expected.append("Optimizer: torch's default Adam, not the fused one")
        assert "flat Adam used" not in output, _fast_path_lines(output)
    for line in expected:
        assert line in output, f"expected: {line!r}\n{_fast_path_lines(output)}"
        if line in EXPECTED_LINES[case_run.name]:
            assert output.count(line) == 1, f"expected once: {line!r}\n{_fast_path_lines(output)}"
    for component in ("Learner", "Inference worker"):  # one decision line per fast path and component
        decisions = re.findall(rf"\] {component}: (.+?) (?:used|skipped)", output)
        assert len(decisions) == len(set(decisions)), _fast_path_lines(output)


@pytest.mark.parametrize("case_run", ["observers_and_summaries"], indirect=True)
def test_observer_and_summaries_see_the_run(case_run: CaseRun) -> None:
    for mode in MODES:
        folder = case_run.experiment(mode)
        seen = json.loads((folder / "user_observer.json").read_text())
        assert seen["training_steps"] > 0 and seen["summaries"] > 0, seen
        assert seen["episodes"] > 0 and seen["extra_stats_seen"] == seen["episodes"], seen
        written = read_scalars(str(folder / ".summary" / "0"))
        assert "user/episodes_seen" in written, sorted(written)
        assert any(tag.endswith("pole_length") for tag in written), sorted(written)


@pytest.mark.parametrize("case_run", ["custom_core_extra_params"], indirect=True)
def test_extra_params_reach_the_config_and_the_model(case_run: CaseRun) -> None:
    for mode in MODES:
        config = json.loads((case_run.experiment(mode) / "config.json").read_text())
        assert config["user_hidden_size"] == 24
        for kind in ("train", "enjoy"):  # enjoy rebuilds the model from the saved config
            assert "SizedMlpEncoder built with user_hidden_size=24" in case_run.phase(kind, mode)


@pytest.mark.parametrize("case_run", ["registered_action_distribution"], indirect=True)
def test_the_registered_distribution_is_used_wherever_actions_are_chosen_or_scored(case_run: CaseRun) -> None:
    markers = set(os.listdir(case_run.train_dir / "distribution_markers"))
    assert {"train_serial__main__built", "train_serial__main__argmax"} <= markers  # one process does it all
    for process in ("learner_p0", "inference_p0_w0", "evaluator"):  # each parallel process has the registration
        assert f"train_parallel__{process}__built" in markers, sorted(markers)
    assert "train_parallel__evaluator__argmax" in markers  # --eval_deterministic=True
    assert {"enjoy_serial__main__argmax", "enjoy_parallel__main__argmax"} <= markers, sorted(markers)


@pytest.mark.parametrize("case_run", ["registered_action_distribution"], indirect=True)
def test_the_evaluator_writes_points_and_eval_csv_in_both_modes(case_run: CaseRun) -> None:
    steps = COMMON_DEFAULTS["train_for_env_steps"]
    for mode in MODES:
        folder = case_run.experiment(mode)
        points = read_scalars(str(folder / ".summary" / "0"))["eval/avg_reward"]
        with open(folder / "eval.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["env_steps"]) for r in rows] == [step for step, _ in points]
        # the niced evaluator may not finish its later rounds before the run ends on a busy machine: one is enough
        assert len(rows) >= 1 and all(512 <= int(r["env_steps"]) <= steps for r in rows), rows
        assert all(r["episodes"] == "2" and r["deterministic"] == "True" for r in rows), rows
        assert case_run.phase("train", mode).count("Evaluation of policy 0 at ") == len(rows)


def _fast_path_lines(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if "Learner: " in line or "Inference worker: " in line)
