"""One rank of the two-rank checks of ``test_rank_learners.py``: ``python two_rank_learners.py RANK PORT OUT MODE``.

Rank 0 serves the store at 127.0.0.1:PORT; both ranks form a gloo group, run the checks and ``torch.save`` what they
saw to OUT for the test to compare:

1. ``AveragedSgdStep`` on a tiny model, flat and per tensor: each rank's own gradient (computed aside) and the one the
   step applied, with and without a layer that rank 0 leaves without a gradient; then a frozen weight and a layer no
   rank uses, which Adam must leave as they are;
2. a KL-adaptive schedule given opposite KLs on the two ranks;
3. a ``Learner`` with its ``TrainingRounds``, as a rank's learner worker drives them: rank 0's state broadcast, three
   training calls on each rank's own batches with merged normalisers and a KL-adaptive learning rate.

MODE ``straggler`` instead checks the bound on a late rank (``straggler``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the learner test helpers

from algo.learning.test_learner import make_cfg, make_env_info, make_trajectories  # noqa: E402

from sample_factory.algo.learning.gradient_averaging import AveragedSgdStep, kl_mean_over_ranks  # noqa: E402
from sample_factory.algo.learning.learner import Learner  # noqa: E402
from sample_factory.algo.learning.lr_schedule import make_lr_schedule  # noqa: E402
from sample_factory.algo.learning.pbt_exchange import weights_digest  # noqa: E402
from sample_factory.algo.learning.training_rounds import TrainingRounds  # noqa: E402
from sample_factory.utils.distributed import add_beat, open_store, rank_info_from  # noqa: E402
from sample_factory.utils.rank_group import RankGroup, RankLostError  # noqa: E402
from sample_factory.utils.timing import Timing  # noqa: E402

TIMEOUT_S = 60.0
TRAINING_CALLS = 3
STRAGGLER_TIMEOUT_S = 3.0  # the straggler check's --distributed_timeout
STRAGGLER_LATE_S = 10.0  # how late rank 1 is for its second round


def _two_layers() -> nn.Module:
    torch.manual_seed(0)  # the same start on both ranks
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))


def averaged_gradients(group: RankGroup, flat: bool, unused_on_rank0: bool) -> dict:
    """One step of AveragedSgdStep: the rank's own gradients (None for a parameter it did not use) and the applied
    ones, flattened; weights after it. With ``unused_on_rank0`` rank 0's loss does not use the last layer."""
    model = _two_layers()
    params = list(model.parameters())
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(10 + group.rank))
    used = params[:2] if unused_on_rank0 and group.rank == 0 else params
    features = model[1](model[0](x))
    loss = (features.sum(dim=1) if len(used) == 2 else model[2](features)).square().mean()
    own = list(torch.autograd.grad(loss, used, retain_graph=True)) + [None] * (len(params) - len(used))
    optimizer = torch.optim.Adam(params, lr=1e-2, fused=True)
    step = AveragedSgdStep(optimizer, params, group, Timing(), flat=flat)
    step(loss, float("inf"))
    applied = torch.cat([p.grad.reshape(-1) for p in params])
    return {"own": own, "applied": applied, "weights": torch.cat([p.detach().reshape(-1) for p in params])}


def frozen_and_unused(group: RankGroup, flat: bool) -> dict:
    """Two steps that use every parameter, then the first weight frozen and two steps whose loss uses no rank's last
    layer: Adam's momentum from the first steps must move neither (as it would with zero gradients)."""
    model = _two_layers()
    params = list(model.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-2, fused=True)
    step = AveragedSgdStep(optimizer, params, group, Timing(), flat=flat)
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(20 + group.rank))
    for _ in range(2):
        step(model(x).square().mean(), float("inf"))
    params[0].requires_grad_(False)
    before = [p.detach().clone() for p in params]
    for _ in range(2):
        step(model[1](model[0](x)).sum(dim=1).square().mean(), float("inf"))
    return {
        "before": before,
        "after": [p.detach().clone() for p in params],
        "grad_is_none": [p.grad is None for p in params],
    }


def kl_adaptive_lr_after_one_step(group: RankGroup) -> dict[str, float]:
    """Rank 0's KL alone would raise the rate, rank 1's lower it; their mean (0.25) lies in the band that keeps it.
    ``reduced``: the rate of a schedule given the ranks' mean; ``own``: that of a plain schedule given the same KL."""
    cfg = make_cfg(lr_schedule="kl_adaptive_minibatch", lr_schedule_kl_threshold=0.2, learning_rate=1e-3)
    kl = torch.tensor(0.05 if group.rank == 0 else 0.45)
    reduced, own = make_lr_schedule(cfg, reduce_kl=kl_mean_over_ranks(group)), make_lr_schedule(cfg)
    reduced.after_minibatch(kl)
    own.after_minibatch(kl)
    return {"reduced": reduced.lr, "own": own.lr}


def trained_learner(group: RankGroup) -> dict:
    """Three training calls of a distributed learner, the way RankLearnerWorker makes them."""
    cfg = make_cfg(lr_schedule="kl_adaptive_minibatch", lr_schedule_kl_threshold=1e-5, learning_rate=1e-3)
    torch.manual_seed(100 + group.rank)  # different initial weights: the broadcast must make them equal
    learner = Learner(cfg, make_env_info())
    learner.ranks = group
    learner.init()
    state = group.broadcast_object(learner.get_checkpoint_state() if group.rank == 0 else None, "the start state")
    learner.load_checkpoint_state(state)
    rounds = TrainingRounds(group, learner.actor_critic, learner.device)
    observations, outcomes, sgd_steps = [], [], 0
    for k in range(TRAINING_CALLS):
        trajectories = make_trajectories(cfg, seed=1000 * group.rank + k)
        observations.append(trajectories["obs"]["obs"][:, : cfg.rollout].reshape(-1, 4))
        prepared = learner.prepare_batch(trajectories)
        outcomes.append(rounds.exchange(False, True, 100 * (k + 1) * (group.rank + 1)))
        rounds.merge_normalizers()
        sgd_steps += learner.train(prepared)["num_sgd_steps"]
    normalizer = learner.actor_critic.obs_normalizer.running_mean_std["obs"]
    return {
        "digest": weights_digest(learner.actor_critic.state_dict()),
        "lr": learner.lr,
        "policy_version": learner.policy_version,
        "sgd_steps": sgd_steps,
        "env_steps": [outcome.env_steps for outcome in outcomes],
        "normalizer": (normalizer.count.clone(), normalizer.running_mean.clone(), normalizer.running_var.clone()),
        "observations": torch.cat(observations),
    }


def straggler(group: RankGroup, store, out: str) -> None:
    """Round 0 together, then rank 1 is late for round 1 (but alive: its heartbeat goes on); rank 0's wait is bounded
    by the group's timeout and its error names rank 1 as behind."""
    beating = threading.Event()

    def beat() -> None:  # what rank 1's runner does every second
        while not beating.wait(0.2):
            add_beat(store, group.rank)

    threading.Thread(target=beat, daemon=True).start()
    for index in (0, 1):
        if group.rank == 1 and index == 1:
            time.sleep(STRAGGLER_LATE_S)
            beating.set()
            return
        group.mark_round(index)
        started = time.monotonic()
        try:
            group.all_reduce_sum_(torch.ones(3), f"training round {index}")
        except RankLostError as exc:
            torch.save({"error": str(exc), "waited": time.monotonic() - started}, out)


def main(rank: int, port: int, out: str, mode: str) -> None:
    torch.set_num_threads(1)
    env = {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    info = rank_info_from(env)
    store = open_store(info, TIMEOUT_S, host=True)
    timeout = STRAGGLER_TIMEOUT_S if mode == "straggler" else TIMEOUT_S
    if mode == "straggler":  # both ranks present before the group forms: a slow start must not use up its 3 s
        store.set(f"present{rank}", "1")
        store.wait(["present0", "present1"], timedelta(seconds=TIMEOUT_S))
    group = RankGroup(info, store, "policy0", "gloo", timeout, torch.device("cpu"))
    if mode == "straggler":
        straggler(group, store, out)
        return
    results = {
        "flat": averaged_gradients(group, flat=True, unused_on_rank0=False),
        "flat_unused": averaged_gradients(group, flat=True, unused_on_rank0=True),
        "per_tensor": averaged_gradients(group, flat=False, unused_on_rank0=True),
        "frozen_flat": frozen_and_unused(group, flat=True),
        "frozen_per_tensor": frozen_and_unused(group, flat=False),
        "kl_lr": kl_adaptive_lr_after_one_step(group),
        "learner": trained_learner(group),
    }
    torch.save(results, out)
    group.broadcast_object(None, "the end")  # rank 0 serves the store: it stays until rank 1 is done with it


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
    # The rank ends the way a learner process does, with os._exit once its results are saved: a gloo group left
    # with a timed-out collective (the straggler check) can abort in its C++ destructors at interpreter exit
    # ("terminate called without an active exception"), which would hide the results behind exit code -6.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
