"""The learner micro-benchmark runs each of its cases and reports positive figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from sample_factory.algo.learning import learner_benchmark
from sample_factory.algo.utils.context import reset_global_context

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _one_thread():
    reset_global_context()
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)
    reset_global_context()


@pytest.mark.parametrize("name", ["cartpole_gym_defaults", "doom_basic_matched"])
def test_a_case_times_prepare_and_train(name):
    case = next(c for c in learner_benchmark.CASES if c.name == name)
    result = learner_benchmark.run_case(case, "cpu", iterations=1, warmup=0)
    assert result["prepare_s"] > 0 and result["train_s"] > 0 and result["sgd_samples_per_s"] > 0
    cfg = learner_benchmark.make_case_cfg(case, "cpu")
    assert result["samples"] == cfg.batch_size * cfg.num_batches_per_epoch
    assert result["device"] == "cpu"


def test_the_matched_doom_case_uses_the_comparison_workloads_flags():
    """Every hyper-parameter the case sets that ``bench/compare_sf2.py``'s workload spells out has its value there."""
    spec = importlib.util.spec_from_file_location("compare_sf2", REPO_ROOT / "bench" / "compare_sf2.py")
    compare_sf2 = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_sf2", compare_sf2)  # its dataclasses look their module up there
    spec.loader.exec_module(sys.modules["compare_sf2"])
    compare_sf2 = sys.modules["compare_sf2"]
    flags = dict(flag[2:].split("=", 1) for flag in compare_sf2.DOOM_BASIC_MATCHED)
    case = next(c for c in learner_benchmark.CASES if c.name == "doom_basic_matched")
    shared = {key for key in case.overrides if key in flags}
    assert len(shared) >= 10
    for key in shared:
        value = case.overrides[key]
        assert type(value)(flags[key] == "True" if isinstance(value, bool) else flags[key]) == value, key


def test_the_gru_comparison_alternates_both_paths_and_refuses_a_case_without_a_gru():
    gru_case = next(c for c in learner_benchmark.CASES if c.name == "cartpole_mlp_gru")
    result = learner_benchmark.compare_gru_bptt(gru_case, "cpu", iterations=1, warmup=0)
    assert result["train_s_nn_gru"] > 0 and result["train_s_kernel"] > 0
    mlp_case = next(c for c in learner_benchmark.CASES if c.name == "cartpole_gym_defaults")
    with pytest.raises(ValueError, match="does not use the GRU BPTT kernel"):
        learner_benchmark.compare_gru_bptt(mlp_case, "cpu", iterations=1, warmup=0)
