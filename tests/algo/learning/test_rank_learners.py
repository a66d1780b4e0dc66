"""Two ranks' learners (gloo, two processes) take identical steps: averaged gradients, merged normalisers, one lr.

The processes run ``two_rank_learners.py``; this test compares what they saw with each other and with references
computed here: the mean of the two ranks' own gradients, and one normaliser fed both ranks' observations.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from sf_run import free_ports

from sample_factory.algo.learning.lr_schedule import linear_decay_updates
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.running_mean_std import RunningMeanStdInPlace

SCRIPT = Path(__file__).with_name("two_rank_learners.py")
REPO_ROOT = Path(__file__).resolve().parents[3]
RUN_TIMEOUT_S = 120


def run_two_ranks(tmp_path: Path, mode: str = "learners") -> list[dict]:
    """Both ranks' results (``two_rank_learners.py`` in ``mode``); every process is reaped whatever happens."""
    port = free_ports(1)[0]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    outs = [tmp_path / f"rank{rank}.pt" for rank in (0, 1)]
    logs = [open(tmp_path / f"rank{rank}.log", "w") for rank in (0, 1)]  # noqa: SIM115 (closed below)
    cmd = [[sys.executable, str(SCRIPT), str(rank), str(port), str(outs[rank]), mode] for rank in (0, 1)]
    procs = [
        subprocess.Popen(c, env=env, stdout=log, stderr=subprocess.STDOUT) for c, log in zip(cmd, logs, strict=True)
    ]
    try:
        codes = [p.wait(timeout=RUN_TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    output = "\n".join((tmp_path / f"rank{rank}.log").read_text() for rank in (0, 1))
    assert codes == [0, 0], output
    return [torch.load(out, weights_only=False) if out.exists() else None for out in outs]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    return run_two_ranks(tmp_path_factory.mktemp("two_ranks"))


def mean_of_those_that_had_one(zero: list, one: list) -> torch.Tensor:
    """Per parameter, the mean of the ranks' gradients over the ranks that had one, flattened."""
    means = []
    for grads in zip(zero, one, strict=True):
        present = [g for g in grads if g is not None]
        means.append((sum(present) / len(present)).reshape(-1))
    return torch.cat(means)


@pytest.mark.parametrize("path", ["flat", "flat_unused", "per_tensor"])
def test_the_applied_gradient_is_the_mean_of_the_ranks_gradients_on_every_rank(ranks: list[dict], path: str) -> None:
    """In ``*_unused`` and ``per_tensor`` rank 0 has no gradient for the last layer: it gets rank 1's."""
    zero, one = ranks[0][path], ranks[1][path]
    assert not torch.equal(zero["own"][0], one["own"][0])  # the ranks' data differ
    assert torch.equal(zero["applied"], one["applied"])
    torch.testing.assert_close(zero["applied"], mean_of_those_that_had_one(zero["own"], one["own"]))
    if path != "flat":
        last = one["own"][-1].reshape(-1)
        torch.testing.assert_close(zero["applied"][-last.numel() :], last)
    assert torch.equal(zero["weights"], one["weights"])


@pytest.mark.parametrize("path", ["frozen_flat", "frozen_per_tensor"])
def test_adam_leaves_frozen_and_unused_parameters_as_they_are(ranks: list[dict], path: str) -> None:
    """The first weight is frozen and the last layer used by no rank after two steps that moved them: with zero
    gradients instead, Adam's momentum would go on moving both."""
    for rank in ranks:
        before, after = rank[path]["before"], rank[path]["after"]
        assert [torch.equal(b, a) for b, a in zip(before, after, strict=True)] == [True, False, True, True]
        assert rank[path]["grad_is_none"] == [True, False, True, True]
    assert all(torch.equal(a, b) for a, b in zip(ranks[0][path]["after"], ranks[1][path]["after"], strict=True))


def test_the_kl_adaptive_rule_sees_the_ranks_mean_kl(ranks: list[dict]) -> None:
    zero, one = ranks[0]["kl_lr"], ranks[1]["kl_lr"]
    assert zero["own"] > 1e-3 > one["own"]  # each rank's own KL moves a plain schedule, oppositely
    assert zero["reduced"] == one["reduced"] == 1e-3  # their mean keeps the rate


def test_learners_end_with_identical_weights_and_learning_rate(ranks: list[dict]) -> None:
    zero, one = ranks[0]["learner"], ranks[1]["learner"]
    assert zero["digest"] == one["digest"]
    assert zero["lr"] == one["lr"] != 1e-3  # the KL-adaptive rule moved it, by the same steps on both ranks
    assert zero["sgd_steps"] == one["sgd_steps"] == zero["policy_version"] == 6  # 3 calls x 2 minibatches
    assert zero["env_steps"] == one["env_steps"] == [[100, 200], [200, 400], [300, 600]]


def test_merged_normalisers_hold_the_statistics_of_both_ranks_data(ranks: list[dict]) -> None:
    reference = RunningMeanStdInPlace((4,))
    for rank in ranks:
        reference.update(rank["learner"]["observations"])
    for rank in ranks:
        count, mean, var = rank["learner"]["normalizer"]
        assert torch.equal(count, reference.count)
        torch.testing.assert_close(mean, reference.running_mean)
        torch.testing.assert_close(var, reference.running_var)
    assert torch.equal(ranks[0]["learner"]["normalizer"][1], ranks[1]["learner"]["normalizer"][1])


def test_linear_decay_reaches_zero_after_the_runs_global_steps() -> None:
    """Each SGD step of W ranks consumes W minibatches of the env steps that --train_for_env_steps counts."""
    cfg = default_cfg()
    cfg.train_for_env_steps, cfg.batch_size, cfg.num_epochs = 400_000, 1024, 2
    assert linear_decay_updates(cfg) == 390 * 2
    assert linear_decay_updates(cfg, world_size=2) == 195 * 2


def test_a_late_rank_stops_the_waiting_one_after_the_timeout_naming_it(tmp_path: Path) -> None:
    """Rank 1 is alive (its heartbeat goes on) but 10 s late for round 1; rank 0 waits --distributed_timeout=3 s."""
    waiting, _ = run_two_ranks(tmp_path, mode="straggler")
    assert waiting is not None, "rank 0 waited without an error"
    assert "Rank(s) 1 had not reached training round 1 (at 0)" in waiting["error"], waiting["error"]
    assert "--distributed_timeout=3 s" in waiting["error"] and "heartbeat" not in waiting["error"]
    assert waiting["waited"] < 9.0  # the timeout and a 3 s look at the heartbeats, not rank 1's 10 s
