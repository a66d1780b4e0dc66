"""Reading a rank from the environment, and the small decisions made from it (log file, seed, backend)."""

from __future__ import annotations

import pytest
import torch

from sample_factory.utils.distributed import (
    SEED_STRIDE,
    RankInfo,
    RankSetupError,
    log_file_name,
    rank_info_from,
    rank_seed,
    resolve_backend,
)

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}


def test_no_variables_or_a_world_of_one_is_a_single_machine_run() -> None:
    assert rank_info_from({}) is None
    assert rank_info_from({**TORCHRUN, "WORLD_SIZE": "1", "RANK": "0"}) is None
    assert rank_info_from({"RANK": "3"}) is None  # a stray RANK alone does not make a run distributed


def test_torchrun_variables_describe_the_rank() -> None:
    info = rank_info_from({**TORCHRUN, "TORCHELASTIC_RESTART_COUNT": "2", "TORCHELASTIC_USE_AGENT_STORE": "True"})
    assert info == RankInfo(1, 4, 1, "node0", 29500, attempt=2, agent_store=True)
    assert not info.is_main and str(info) == "rank 1 of 4 (local rank 1)"
    launched_by_hand = rank_info_from({key: value for key, value in TORCHRUN.items() if key != "LOCAL_RANK"})
    assert launched_by_hand.local_rank == 0 and launched_by_hand.attempt == 0 and not launched_by_hand.agent_store


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"MASTER_ADDR": ""}, "MASTER_ADDR not set"),
        ({"RANK": "", "MASTER_PORT": ""}, "RANK, MASTER_PORT not set"),
        ({"RANK": "4"}, "RANK=4 must lie in 0..WORLD_SIZE-1=3"),
        ({"WORLD_SIZE": "four"}, "WORLD_SIZE='four' is not an integer"),
        ({"MASTER_PORT": "70000"}, "MASTER_PORT=70000 is not a TCP port"),
    ],
)
def test_an_incomplete_or_wrong_environment_is_refused_naming_the_variable(changes: dict, message: str) -> None:
    with pytest.raises(RankSetupError, match=message):
        rank_info_from({**TORCHRUN, **changes})


def test_only_rank_zero_writes_sf_log_txt_and_only_other_ranks_shift_their_seed() -> None:
    zero, two = RankInfo(0, 3, 0, "h", 1), RankInfo(2, 3, 0, "h", 1)
    assert log_file_name(None) == log_file_name(zero) == "sf_log.txt"
    assert log_file_name(two) == "sf_log_rank2.txt"
    assert rank_seed(5, zero) == 5 and rank_seed(5, two) == 5 + 2 * SEED_STRIDE and rank_seed(None, two) is None


def test_backend_follows_the_learners_device_and_nccl_needs_a_gpu() -> None:
    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert resolve_backend("auto", cpu) == "gloo" and resolve_backend("auto", gpu) == "nccl"
    assert resolve_backend("gloo", gpu) == "gloo"
    with pytest.raises(RankSetupError, match="--distributed_backend=nccl needs the learner on a GPU"):
        resolve_backend("nccl", cpu)
