"""Merging running statistics kept apart (the ranks of a distributed run) gives the statistics of all the data.

The reference is always one normaliser that saw every batch itself; the merges go through ``(n, s1, s2)`` sums, added
up as an all-reduce would, on top of a common earlier state.
"""

from __future__ import annotations

import torch

from sample_factory.model.running_mean_std import (
    RunningMeanStdInPlace,
    merge_moments,
    moments_added,
    moments_of,
    recentre,
    set_moments,
)


def _batches(seed: int, count: int, shape: tuple[int, ...]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [
        torch.randn(7 + i, *shape, generator=gen, dtype=torch.float64) * (1 + seed) + 3 * seed for i in range(count)
    ]


def _fed(shape: tuple[int, ...], batches: list[torch.Tensor], **kwargs) -> RunningMeanStdInPlace:
    normalizer = RunningMeanStdInPlace(shape, **kwargs)
    for batch in batches:
        normalizer.update(batch)
    return normalizer


def _assert_same_statistics(a: RunningMeanStdInPlace, b: RunningMeanStdInPlace) -> None:
    assert torch.equal(a.count, b.count)
    torch.testing.assert_close(a.running_mean, b.running_mean, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(a.running_var, b.running_var, rtol=1e-10, atol=1e-12)


def _sum(parts: list[tuple]) -> tuple:
    return tuple(sum(values) for values in zip(*parts, strict=True))


def test_three_ranks_gains_merged_on_a_common_base_equal_one_normaliser_fed_everything() -> None:
    shape = (5,)
    common = _batches(0, 2, shape)
    per_rank = [_batches(seed, 3, shape) for seed in (1, 2, 3)]
    base = _fed(shape, common)
    earlier = moments_of(base)
    ranks = [_fed(shape, common + batches) for batches in per_rank]
    summed = _sum([moments_added(moments_of(r), earlier) for r in ranks])  # what the all-reduce adds up
    merged = RunningMeanStdInPlace(shape)
    set_moments(merged, merge_moments(earlier, summed))
    _assert_same_statistics(merged, _fed(shape, common + [b for batches in per_rank for b in batches]))


def test_merging_from_nothing_and_per_channel_statistics() -> None:
    shape = (3, 4, 4)
    per_rank = [_batches(seed, 2, shape) for seed in (4, 5)]
    fresh = RunningMeanStdInPlace(shape, per_channel=True)
    earlier = moments_of(fresh)
    ranks = [_fed(shape, batches, per_channel=True) for batches in per_rank]
    summed = _sum([moments_added(moments_of(r), earlier) for r in ranks])
    set_moments(fresh, merge_moments(earlier, summed))
    _assert_same_statistics(fresh, _fed(shape, per_rank[0] + per_rank[1], per_channel=True))


def test_data_added_during_the_exchange_is_kept_on_top_of_the_merge() -> None:
    """A rank sends its gains and keeps updating while the all-reduce runs: nothing is lost or counted twice."""
    shape = (2,)
    earlier_batches, sent_batches, late_batches, other_batches = (_batches(s, 2, shape) for s in (6, 7, 8, 9))
    local = _fed(shape, earlier_batches + sent_batches)
    earlier = moments_of(_fed(shape, earlier_batches))
    sent = moments_of(local)
    other = moments_of(_fed(shape, earlier_batches + other_batches))
    for batch in late_batches:
        local.update(batch)
    merged = merge_moments(earlier, _sum([moments_added(sent, earlier), moments_added(other, earlier)]))
    late = recentre(moments_added(moments_of(local), sent), sent[1], merged[1])
    set_moments(local, merge_moments(merged, late))
    _assert_same_statistics(local, _fed(shape, earlier_batches + sent_batches + other_batches + late_batches))


def test_nothing_added_leaves_statistics_unchanged_including_an_unused_normaliser() -> None:
    unused = RunningMeanStdInPlace((3,))
    set_moments(unused, merge_moments(moments_of(unused), moments_added(moments_of(unused), moments_of(unused))))
    assert float(unused.count) == 0 and torch.equal(unused.running_var, torch.ones(3))
    used = _fed((3,), _batches(10, 2, (3,)))
    before = moments_of(used)
    set_moments(used, merge_moments(before, moments_added(before, before)))
    _assert_same_statistics(used, _fed((3,), _batches(10, 2, (3,))))
