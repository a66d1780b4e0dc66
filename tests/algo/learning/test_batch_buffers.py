"""Training batches are assembled once, where the learner trains: placement decisions and the copy path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.learning.batch_buffers import BatchPlacement, TrainingBatches, batch_placement
from sample_factory.algo.utils.shared_buffers import allocate_trajectories
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo

NUM_SLOTS = 6


def _setup():
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, 2
    info = EnvInfo(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, NUM_SLOTS, share=False)
    for i, leaf in enumerate(traj.leaves()):  # every value says which slot and which leaf it belongs to
        slot_ids = torch.arange(NUM_SLOTS).view(-1, *[1] * (leaf.dim() - 1))
        leaf.copy_((slot_ids * 10 + i).expand_as(leaf).to(leaf.dtype) if leaf.dtype != torch.bool else slot_ids % 2)
    return cfg, info, traj


def _expect_slots(batch, traj, slots: list[int]) -> None:
    for got, source in zip(batch.leaves(), traj.leaves(), strict=True):
        assert torch.equal(got.cpu(), source[slots])


def _pointers(batches: TrainingBatches) -> list[int]:
    return [leaf.data_ptr() for batch in batches.batches for leaf in batch.leaves()]


def test_a_cuda_learner_gets_pinned_staging_and_a_non_blocking_copy() -> None:
    placement = batch_placement(torch.device("cuda:1"))  # only decides: no GPU needed
    assert placement == BatchPlacement(torch.device("cuda:1"), staged=True, pinned=True, non_blocking=True)


def test_a_cpu_learner_gets_its_batches_gathered_in_place() -> None:
    assert batch_placement("cpu") == BatchPlacement(torch.device("cpu"), staged=False, pinned=False, non_blocking=False)


def test_another_accelerator_is_staged_through_ordinary_memory_with_a_waiting_copy() -> None:
    placement = batch_placement("mps")
    assert placement.staged and not placement.pinned and not placement.non_blocking


def test_a_placement_that_cannot_work_is_refused() -> None:
    with pytest.raises(ValueError, match="must be staged"):
        BatchPlacement(torch.device("cuda"), staged=False, pinned=False, non_blocking=False)
    with pytest.raises(ValueError, match="needs pinned staging"):
        BatchPlacement(torch.device("cuda"), staged=True, pinned=False, non_blocking=True)


def test_cpu_batches_are_filled_by_one_gather_into_the_same_buffers() -> None:
    cfg, info, traj = _setup()
    batches = TrainingBatches(cfg, info, batch_placement("cpu"))
    assert len(batches) == 2 and batches.staging is None
    assert batches.trajectories_per_batch == 2 and batches.samples_per_batch == 8
    pointers = _pointers(batches)
    batches.fill(0, traj, torch.tensor([4, 1]))
    batches.fill(1, traj, torch.tensor([0, 5]))
    _expect_slots(batches[0], traj, [4, 1])
    _expect_slots(batches[1], traj, [0, 5])
    batches.fill(0, traj, torch.tensor([2, 3]))
    _expect_slots(batches[0], traj, [2, 3])
    assert _pointers(batches) == pointers, "the buffers are allocated once and refilled in place"
    # the learner's move to its device hands back these very tensors: the batch is not copied a second time
    moved = batches[0].to(batches.device)
    assert [leaf.data_ptr() for leaf in moved.leaves()] == [leaf.data_ptr() for leaf in batches[0].leaves()]


def test_staged_batches_go_through_their_staging_buffer() -> None:
    """The staged copy path, run on the CPU: gather into staging, then one copy into the device-side buffer."""
    cfg, info, traj = _setup()
    placement = BatchPlacement(torch.device("cpu"), staged=True, pinned=False, non_blocking=False)
    batches = TrainingBatches(cfg, info, placement)
    staged = [leaf.data_ptr() for leaf in batches.staging[1].leaves()]
    assert not set(staged) & set(_pointers(batches)), "staging and batch buffers are separate memory"
    pointers = _pointers(batches)
    batches.fill(1, traj, torch.tensor([5, 2]))
    _expect_slots(batches.staging[1], traj, [5, 2])
    _expect_slots(batches[1], traj, [5, 2])
    batches.fill(1, traj, torch.tensor([3, 0]))
    _expect_slots(batches[1], traj, [3, 0])
    assert _pointers(batches) == pointers
    assert [leaf.data_ptr() for leaf in batches.staging[1].leaves()] == staged


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batches_live_on_the_gpu_and_arrive_through_pinned_memory() -> None:
    cfg, info, traj = _setup()
    batches = TrainingBatches(cfg, info, batch_placement("cuda"))
    assert all(leaf.is_cuda for leaf in batches[0].leaves())
    assert all(leaf.is_pinned() for leaf in batches.staging[0].leaves())
    batches.fill(0, traj, torch.tensor([1, 4]))
    batches.fill(0, traj, torch.tensor([5, 0]))  # waits for the first copy out of the same staging buffer
    torch.cuda.synchronize()
    _expect_slots(batches[0], traj, [5, 0])
