"""Training rounds of a distributed run: the exchange that opens every training call of a rank's learner.

Collective calls must come in the same order on every rank, so a learner's collectives are organised in rounds, and
only its training thread makes them. Round ``k`` is the ``k``-th training call of every rank: it opens with one
all-reduce of a float64 vector that carries, per rank,

- whether the rank stops (a stop request, or no batch: a rank that stops still enters the round to say so),
- whether its batch has no valid sample (then no rank trains in this round),
- its env steps since the run began (their sum is the run's count, which the runners compare with
  ``--train_for_env_steps``),

followed by what each running normaliser learned on this rank since the last round (``running_mean_std``'s
``(n, s1, s2)``), whose sum merges the statistics of every rank's data exactly. Unless a rank stops or has nothing to
train on, every rank then trains on its own batch: the same number of SGD steps, each with one gradient all-reduce
(``gradient_averaging``). When any rank stops, every rank leaves the rounds after this one, so none ever waits in a
collective for a rank that has left. A rank that is ready first waits for the others, up to ``--distributed_timeout``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from sample_factory.algo.learning.batch_preparation import normalizers_lock
from sample_factory.model.running_mean_std import (
    Moments,
    RunningMeanStdInPlace,
    merge_moments,
    moments_added,
    moments_of,
    recentre,
    set_moments,
)
from sample_factory.utils.rank_group import RankGroup


@dataclass
class RoundOutcome:
    """What every rank learned from round ``index`` (the same on every rank)."""

    index: int
    stopping_ranks: list[int]
    ranks_without_samples: list[int]
    env_steps: list[int]  # per rank, collected since this run (re)started

    @property
    def trains(self) -> bool:
        return not self.stopping_ranks and not self.ranks_without_samples


class NormalizerMerge:
    """Keeps a model's running normalisers the same on every rank: each round merges what every rank learned.

    ``merged`` holds the statistics of the last round, the same on every rank. Between rounds the learner's main
    thread updates its normalisers from its own batches; a round sends what they gained since ``merged`` and merges
    the sum. Whatever the main thread adds while the round's all-reduce runs is kept on top (it goes to the next
    round), and ``restore_merged`` drops it at the end of the run, when it will never be trained on.
    """

    def __init__(self, model: nn.Module) -> None:
        self.normalizers = [m for m in model.modules() if isinstance(m, RunningMeanStdInPlace)]
        self.merged: list[Moments] = [moments_of(m) for m in self.normalizers]
        self.sent: list[Moments] = []

    def local_gains(self, device: torch.device) -> Tensor:
        """float64 ``[n, s1..., s2...]`` of every normaliser: its samples since the last merge."""
        with normalizers_lock():
            self.sent = [moments_of(m) for m in self.normalizers]
        parts = []
        for now, merged in zip(self.sent, self.merged, strict=True):
            n, s1, s2 = moments_added(now, merged)
            parts += [n.reshape(1), s1.reshape(-1), s2.reshape(-1)]
        return torch.cat(parts).to(device) if parts else torch.zeros(0, dtype=torch.float64, device=device)

    def merge(self, summed: Tensor) -> None:
        """Merge the ranks' summed gains (``local_gains``'s layout), keeping what this rank added meanwhile."""
        offset = 0
        for i, normalizer in enumerate(self.normalizers):
            count, mean, m2 = self.merged[i]
            k = mean.numel()
            n, s1, s2 = summed[offset], summed[offset + 1 : offset + 1 + k], summed[offset + 1 + k : offset + 1 + 2 * k]
            offset += 1 + 2 * k
            added = (n.to(count.device), s1.view_as(mean).to(mean.device), s2.view_as(mean).to(mean.device))
            merged = merge_moments(self.merged[i], added)
            with normalizers_lock():
                late = recentre(moments_added(moments_of(normalizer), self.sent[i]), self.sent[i][1], merged[1])
                set_moments(normalizer, merge_moments(merged, late))
            self.merged[i] = merged

    def restore_merged(self) -> None:
        """Every rank's normalisers back to the last round's common statistics."""
        with normalizers_lock():
            for normalizer, merged in zip(self.normalizers, self.merged, strict=True):
                set_moments(normalizer, merged)


class TrainingRounds:
    """The rounds of one rank's learner (module docstring); ``over`` once a round saw a rank stop."""

    def __init__(self, group: RankGroup, model: nn.Module, device: torch.device) -> None:
        self.group = group
        self.device = device
        self.normalizers = NormalizerMerge(model)
        self.index = 0
        self.over = False
        self._summed_gains: Tensor | None = None

    def exchange(self, stopping: bool, has_samples: bool, env_steps: int) -> RoundOutcome:
        """Enter the next round: one all-reduce with every rank (``merge_normalizers`` applies its statistics)."""
        world, rank = self.group.world_size, self.group.rank
        control = torch.zeros(3 * world, dtype=torch.float64, device=self.device)
        control[rank] = float(stopping)
        control[world + rank] = float(not has_samples)
        control[2 * world + rank] = float(env_steps)
        vector = torch.cat([control, self.normalizers.local_gains(self.device)])
        self.group.mark_round(self.index)
        self.group.all_reduce_sum_(vector, f"training round {self.index}")
        summed = vector[: 3 * world].tolist()
        self._summed_gains = vector[3 * world :]
        outcome = RoundOutcome(
            index=self.index,
            stopping_ranks=[r for r in range(world) if summed[r] > 0],
            ranks_without_samples=[r for r in range(world) if summed[world + r] > 0],
            env_steps=[int(x) for x in summed[2 * world :]],
        )
        self.index += 1
        self.over = bool(outcome.stopping_ranks)
        return outcome

    def merge_normalizers(self) -> None:
        """Apply the normaliser statistics of the last round (call with the learner's training lock held)."""
        if self._summed_gains is not None:
            self.normalizers.merge(self._summed_gains)
            self._summed_gains = None
