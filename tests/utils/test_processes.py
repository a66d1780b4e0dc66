"""CPU cores each rollout worker is pinned to."""

from __future__ import annotations

import pytest

from sample_factory.utils.processes import cores_for_worker_process


def _all(num_workers: int, cpu_count: int) -> list[list[int] | None]:
    return [cores_for_worker_process(i, num_workers, cpu_count) for i in range(num_workers)]


def test_more_workers_than_cores_round_robin():
    assert _all(5, 2) == [[0], [1], [0], [1], [0]]
    assert _all(4, 4) == [[0], [1], [2], [3]]


def test_more_cores_than_workers_each_gets_its_share():
    assert _all(2, 8) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    shares = _all(3, 8)
    assert sorted(core for share in shares for core in share) == list(range(8))  # every core used exactly once
    assert {len(share) for share in shares} == {2, 3}  # uneven split differs by one core at most


def test_single_core_nothing_to_pin():
    assert _all(3, 1) == [None, None, None]


@pytest.mark.parametrize(("worker_idx", "num_workers", "cpu_count"), [(3, 3, 4), (-1, 2, 4), (0, 0, 4), (0, 2, 0)])
def test_bad_arguments_are_refused(worker_idx, num_workers, cpu_count):
    with pytest.raises(ValueError):
        cores_for_worker_process(worker_idx, num_workers, cpu_count)
