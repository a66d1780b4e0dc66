"""StagedGather: which path a device gets, and that staged rows are exactly ``source[slots, steps]`` (run on the CPU
with staging forced on, since no GPU is needed to check the indexing and the buffer reuse)."""

from __future__ import annotations

import pytest
import torch

from sample_factory.algo.utils.host_staging import StagedGather

NUM_SLOTS, STEPS = 5, 4  # STEPS = T + 1


def _sources() -> dict:
    """Buffers whose every row names its ``(slot, step)``: ``100 * slot + step`` (images: modulo 256)."""
    slot = torch.arange(NUM_SLOTS).view(-1, 1)
    step = torch.arange(STEPS).view(1, -1)
    code = (100 * slot + step).float()  # [NUM_SLOTS, STEPS]
    return {
        "obs": {
            "img": (code % 256).to(torch.uint8).view(NUM_SLOTS, STEPS, 1, 1, 1).expand(-1, -1, 3, 2, 2).contiguous(),
            "vec": code.unsqueeze(-1).repeat(1, 1, 2),
        },
        "rnn_states": code.unsqueeze(-1).repeat(1, 1, 3),
    }


def _expected_codes(slots: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    return (100 * slots + steps).float()


def test_the_path_follows_the_device_and_nothing_is_allocated_up_front() -> None:
    cpu = StagedGather("cpu")
    assert not cpu.staged and not cpu.pin_memory
    gpu = StagedGather(torch.device("cuda", 0))  # no CUDA call: buffers are made at the first gather
    assert gpu.staged and gpu.pin_memory and gpu.buffers == {}
    forced = StagedGather("cpu", staged=True)
    assert forced.staged and not forced.pin_memory


@pytest.mark.parametrize("staged", [False, True])
def test_gathered_rows_are_the_requested_slot_and_step(staged: bool) -> None:
    sources = _sources()
    slots = torch.tensor([3, 0, 4, 3, 1])
    steps = torch.tensor([2, 0, 3, 1, 2])  # slot 3 twice at two steps; step T of slot 4 (the last one)
    gathered = StagedGather("cpu", staged=staged).gather(sources, slots, steps)
    codes = _expected_codes(slots, steps)
    assert torch.equal(gathered["obs"]["vec"], codes.unsqueeze(-1).repeat(1, 2))
    assert torch.equal(gathered["rnn_states"], codes.unsqueeze(-1).repeat(1, 3))
    assert gathered["obs"]["img"].dtype == torch.uint8 and gathered["obs"]["img"].shape == (5, 3, 2, 2)
    assert torch.equal(gathered["obs"]["img"][:, 0, 0, 0], (codes % 256).to(torch.uint8))
    for key, source in sources["obs"].items():
        assert torch.equal(gathered["obs"][key], source[slots, steps])


def test_staging_buffers_are_reused_and_grown() -> None:
    stager = StagedGather("cpu", staged=True)
    sources = _sources()
    first = stager.gather(sources, torch.tensor([1, 2, 3]), torch.tensor([0, 1, 2]))
    buffer = stager.buffers[("obs", "vec")]
    assert first["obs"]["vec"].data_ptr() == buffer.data_ptr()  # gathered straight into the staging buffer
    second = stager.gather(sources, torch.tensor([4]), torch.tensor([3]))
    assert stager.buffers[("obs", "vec")] is buffer  # fewer rows: the same buffer
    assert torch.equal(
        second["obs"]["vec"], _expected_codes(torch.tensor([4]), torch.tensor([3])).view(1, 1).repeat(1, 2)
    )
    slots, steps = torch.arange(5).repeat(2), torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 0, 1])
    third = stager.gather(sources, slots, steps)
    assert len(stager.buffers[("obs", "vec")]) == 10  # more rows than before: grown
    assert torch.equal(third["rnn_states"][:, 0], _expected_codes(slots, steps))


def test_unstaged_rows_belong_to_the_caller() -> None:
    stager = StagedGather("cpu")
    sources = _sources()
    first = stager.gather(sources, torch.tensor([1]), torch.tensor([1]))
    stager.gather(sources, torch.tensor([2]), torch.tensor([2]))
    assert float(first["rnn_states"][0, 0]) == 101.0 and stager.buffers == {}


def test_buffers_of_different_lengths_are_refused() -> None:
    sources = {"a": torch.zeros(2, 3, 1), "b": torch.zeros(2, 4, 1)}
    with pytest.raises(ValueError, match=r"different numbers of steps per slot \[3, 4\]"):
        StagedGather("cpu", staged=True).gather(sources, torch.tensor([0]), torch.tensor([0]))
