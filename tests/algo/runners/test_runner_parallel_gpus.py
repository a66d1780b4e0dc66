"""Per-process options of the children: which GPU each rollout worker process sees (GPU discovery is faked: no GPU
needed) and torch's thread count there."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch

from sample_factory.algo.runners import child_process
from sample_factory.algo.runners.components import SharedState
from sample_factory.cfg.validation import ConfigError
from sample_factory.utils import gpu_utils
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.gpu_utils import CUDA_ENVVAR


def _cfg(**overrides) -> AttrDict:
    base = dict(
        device="gpu",
        actor_worker_gpus=[],
        default_niceness=0,
        set_workers_cpu_affinity=False,
        force_envs_single_thread=False,
    )
    return AttrDict({**base, **overrides})


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """``set_process_options`` is meant for a fresh child: undo its thread setting in this test process."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def four_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CUDA_ENVVAR, raising=False)  # also restores the variable after the test
    monkeypatch.setattr(gpu_utils, "get_gpus_without_triggering_pytorch_cuda_initialization", lambda *_: [0, 1, 2, 3])


@pytest.mark.parametrize(("worker_idx", "expected"), [(0, "1"), (1, "3"), (2, "1")])
def test_rollout_workers_are_spread_over_the_listed_gpus(four_gpus, worker_idx: int, expected: str) -> None:
    cfg = _cfg(actor_worker_gpus=[1, 3])
    child_process.pin_visible_gpus(cfg)
    assert os.environ[CUDA_ENVVAR] == "0,1,2,3"  # pinned in the runner: every child counts the same GPUs
    child_process.set_process_options(cfg, SimpleNamespace(kind="rollout"), worker_idx)
    assert os.environ[CUDA_ENVVAR] == expected


def test_other_processes_and_an_empty_list_leave_the_gpus_alone(four_gpus) -> None:
    child_process.pin_visible_gpus(_cfg(actor_worker_gpus=[1]))
    child_process.set_process_options(_cfg(actor_worker_gpus=[1]), SimpleNamespace(kind="inference"), None)
    child_process.set_process_options(_cfg(), SimpleNamespace(kind="rollout"), 0)
    assert os.environ[CUDA_ENVVAR] == "0,1,2,3"


def test_learning_on_the_cpu_keeps_the_gpus_rollout_workers_ask_for(four_gpus) -> None:
    cfg = _cfg(device="cpu", actor_worker_gpus=[2])
    child_process.pin_visible_gpus(cfg)
    child_process.set_process_options(cfg, SimpleNamespace(kind="rollout"), 0)
    assert os.environ[CUDA_ENVVAR] == "2"


def test_positions_beyond_the_visible_gpus_are_refused_in_the_runner(four_gpus) -> None:
    with pytest.raises(ConfigError, match=r"--actor_worker_gpus: .*only 4 are available"):
        child_process.pin_visible_gpus(_cfg(actor_worker_gpus=[4]))


@pytest.mark.parametrize(("kind", "gets_weights"), [("rollout", False), ("inference", True), ("learner", True)])
def test_only_processes_that_read_weights_receive_them(kind: str, gets_weights: bool) -> None:
    """Weights on a GPU would initialise CUDA in every rollout worker that unpickles them."""
    weights = [object(), object()]
    shared = SharedState(_cfg(), None, None, None, weights, serial=False)
    received = child_process.shared_state_for(SimpleNamespace(kind=kind), shared)
    assert received.weights == (weights if gets_weights else [])
    assert received.cfg is shared.cfg and shared.weights is weights  # the runner keeps its own copy whole


@pytest.fixture
def _keep_affinity():
    cores = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, cores)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
@pytest.mark.parametrize(("async_rl", "pinned"), [(True, True), (False, False)])
def test_rollout_workers_are_pinned_in_async_mode_by_default(_keep_affinity, async_rl: bool, pinned: bool) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    cfg = _cfg(device="cpu", set_workers_cpu_affinity=True, async_rl=async_rl, num_workers=len(allowed), cli_args={})
    child_process.set_process_options(cfg, SimpleNamespace(kind="rollout"), 1)
    assert os.sched_getaffinity(0) == ({allowed[1]} if pinned else set(allowed))


def test_rollout_workers_run_torch_on_one_thread() -> None:
    """Their copies of trajectory rows must not start an OpenMP team on cores the envs and learner keep busy."""
    torch.set_num_threads(2)
    child_process.set_process_options(_cfg(), SimpleNamespace(kind="inference"), None)
    assert torch.get_num_threads() == 2  # the inference worker and the learner choose their own count
    child_process.set_process_options(_cfg(), SimpleNamespace(kind="rollout"), 0)
    assert torch.get_num_threads() == 1
