"""One rank's learner in a distributed run (DD-PPO's decentralised design): a :class:`LearnerWorkerComponent` whose
SGD steps average their gradients with the same policy's learners on the other ranks, so all of them keep identical
weights.

What differs from a single-machine learner:

- start: it joins its policy's process group (``RankGroup``); rank 0 restores the latest checkpoint as usual and its
  whole state (weights and normalisers, optimiser, counters, learning-rate schedule) is broadcast, so every rank starts
  from the same weights whatever the number of ranks that wrote the checkpoint (and no rank needs rank 0's disk);
- training: every training call is a round (``training_rounds``): stop requests, env steps and normalisers are
  exchanged, then every rank makes the same SGD steps on its own batch; the env steps it reports are the run's, all
  ranks together, so ``--train_for_env_steps`` and the stop decision are global;
- files: only rank 0 writes checkpoints (regular, milestone and best ones). When a rank dies, a collective fails
  half-way through a training step and the live model may hold some of that step's SGD updates; at stop rank 0 then
  saves the weights it last published (those of the last training step that completed on every rank) with that step's
  train step, policy version and env steps (``_save_after_failure``);
- stop: a rank that stops enters one last round to say so, so no rank waits in a collective for one that has left; at
  exit every rank logs ``Policy N weights digest: <hex>``, which must be the same on every rank.
"""

from __future__ import annotations

import time
import traceback

from torch import Tensor

from sample_factory.algo.learning.learner_worker import LearnerWorkerComponent
from sample_factory.algo.learning.pbt_exchange import weights_digest
from sample_factory.algo.learning.training_rounds import RoundOutcome, TrainingRounds
from sample_factory.algo.runners.stats import FPS_WINDOWS, FpsMeter, nan_to_zero
from sample_factory.algo.utils.checkpoints import save_checkpoint
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.utils.distributed import RankInfo, open_store, resolve_backend
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.logging_setup import log
from sample_factory.utils.rank_group import RankGroup, RankLostError


class RankLearnerWorker(LearnerWorkerComponent):
    """The learner worker of ``rank`` (module docstring); the training loop specs build it in a distributed run."""

    def __init__(self, *args, rank: RankInfo, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rank_info = rank
        self.group: RankGroup | None = None
        self.rounds: TrainingRounds | None = None
        self.local_env_steps = 0  # collected by this rank since the run (re)started
        self.rounds_broken = False  # a collective failed: this rank makes no more
        self.rank_fps = [FpsMeter() for _ in range(rank.world_size)]
        # the run's env steps after the latest training step that completed on every rank (None: none yet)
        self.complete_env_steps: int | None = None

    # ---------------------------------------------------------------- start-up
    def _rank_group(self) -> RankGroup:
        """Joins this policy's process group over the run's store; the learner's SGD steps reduce in it."""
        cfg, info = self.cfg, self.rank_info
        device = policy_device(cfg, self.policy_id)
        backend = resolve_backend(cfg.distributed_backend, device)
        store = open_store(info, cfg.distributed_timeout, host=False)
        self.group = RankGroup(info, store, f"policy{self.policy_id}", backend, cfg.distributed_timeout, device)
        log.info("Policy %d: %s learns on %s, gradients averaged over %d ranks (%s)", self.policy_id, info, device,
                 info.world_size, backend)  # fmt: skip
        return self.group

    def _restore(self) -> None:
        """Rank 0 restores from its disk as usual; every rank then takes rank 0's whole state."""
        state = None
        if self.rank_info.is_main:
            super()._restore()
            state = _on_host(self._checkpoint_state())
            state.pop("sampler", None)  # rank 0's env states mean nothing to the other ranks' envs
        state = self.group.broadcast_object(state, "broadcasting rank 0's weights")
        if not self.rank_info.is_main:
            self.learner.load_checkpoint_state(state)
            self.resumed_env_steps = self.env_steps = int(state["env_steps"])
        self.rounds = TrainingRounds(self.group, self.learner.actor_critic, self.learner.device)
        log.info(
            "Policy %d: %s starts from rank 0's weights (train step %d, env steps %d, weights digest %s)",
            self.policy_id, self.rank_info, self.learner.train_step, self.env_steps,
            weights_digest(self.learner.actor_critic.state_dict()),
        )  # fmt: skip

    def _resumed_from(self, state: dict) -> None:
        written_by, world = int(state.get("world_size", 1)), self.rank_info.world_size
        if written_by != world:
            log.info(
                "Policy %d: the checkpoint was written by a run of %d rank(s), this run has %d: every rank starts "
                "from it; --batch_size is per rank, so an SGD step now averages %d minibatches",
                self.policy_id, written_by, world, world,
            )  # fmt: skip

    def _checkpoint_state(self) -> dict:
        state = super()._checkpoint_state()
        state["world_size"] = self.rank_info.world_size
        return state

    # ---------------------------------------------------------------- rounds
    @property
    def _rounds_ended(self) -> bool:
        """Training has ended on every rank (the rounds are over) or for this rank (a collective failed)."""
        return self.rounds.over or self.rounds_broken

    def _count_env_steps(self, env_steps: int) -> None:
        self.local_env_steps = env_steps  # the run's count comes from the rounds

    def on_batch_ready(self, batch_idx: int, env_steps: int) -> None:
        if self.rounds is None or self._rounds_ended:
            self._count_env_steps(env_steps)
            self.send(self.batcher_address, "on_training_done", batch_idx, True)
            return
        super().on_batch_ready(batch_idx, env_steps)

    def _train(self, prepared, generation: int) -> dict | None:
        try:
            outcome = self._enter_round(stopping=self.stopping, has_samples=bool(prepared["valids"].any()))
            if outcome is None or not outcome.trains:
                return None
            stats = super()._train(prepared, generation)
        except Exception as exc:  # whatever failed, this rank's collectives are out of step with the others' now
            self.rounds_broken = True
            if not isinstance(exc, RankLostError):
                raise  # a bug: its traceback goes to the runner (on_training_error)
            self.consistent = False  # the message names the ranks at fault: it says more than the traceback
            if self.thread is None:
                self.on_training_error(str(exc))
            else:
                self.loop.post(self.name, "on_training_error", str(exc))
            return None
        if stats is not None:
            self.complete_env_steps = self.env_steps  # every collective of the step completed
            stats.update({f"perf/rank{r}_fps": nan_to_zero(m.fps(FPS_WINDOWS[0])) for r, m in enumerate(self.rank_fps)})
        return stats

    def _enter_round(self, stopping: bool, has_samples: bool) -> RoundOutcome | None:
        """The next round (None when the rounds are over); merges the normalisers and counts the run's env steps."""
        if self._rounds_ended:
            return None
        try:
            with self.learner.timing.add_time("round_exchange"):
                outcome = self.rounds.exchange(stopping, has_samples, self.local_env_steps)
        except Exception:
            self.rounds_broken = True
            raise
        with self.train_lock:
            self.rounds.merge_normalizers()
        self.env_steps = self.resumed_env_steps + sum(outcome.env_steps)
        now = time.monotonic()
        for meter, steps in zip(self.rank_fps, outcome.env_steps, strict=True):
            meter.record(steps, now)
        if outcome.ranks_without_samples and not outcome.stopping_ranks:
            log.warning("Policy %d, round %d: rank(s) %s had no valid sample in their batch: no rank trains on this "
                        "round's batches", self.policy_id, outcome.index, outcome.ranks_without_samples)  # fmt: skip
        others = [r for r in outcome.stopping_ranks if r != self.rank_info.rank]
        if others and not stopping:
            self.loop.post(self.name, "on_peer_ranks_stopping", others)
        return outcome

    def on_peer_ranks_stopping(self, ranks: list[int]) -> None:
        """Other ranks stopped training (learned in a round): this rank's runner stops the rank."""
        self.send(RUNNER, "on_ranks_stopping", ranks)

    def _training_thread(self) -> None:
        super()._training_thread()
        self._leave_rounds()

    def _leave_rounds(self) -> None:
        """The last round of a rank that stops: tells the others, who leave the rounds after it too."""
        try:
            self._enter_round(stopping=True, has_samples=False)
        except Exception:
            log.error("%s could not tell the other ranks that it stops:\n%s", self.name, traceback.format_exc())

    # ---------------------------------------------------------------- files and shutdown
    def _save_after_failure(self) -> None:
        """A rank was lost half-way through a step: rank 0 saves the state of the last step every rank completed.

        The weights come from the published copy, written at the end of that step; the train step counts completed
        steps only and the env steps are those of that step. The optimiser's moments and the learning-rate schedule
        are the live ones: they may include the first SGD steps of the step that failed."""
        if not self.rank_info.is_main or self.complete_env_steps is None:
            super()._save_after_failure()
            return
        if self.thread is not None and self.thread.is_alive():  # still waiting in a collective: the model is in use
            log.error("%s: not saving a final checkpoint, training is still waiting for the other ranks", self.name)
            return
        try:
            with self.train_lock, self.timing.add_time("save_checkpoint"):
                self.learner.policy_version = self.weights.load_into(self.learner.actor_critic)
                self.env_steps = self.complete_env_steps
                state = self._checkpoint_state()
                state.pop("sampler", None)  # only meaningful with the sampler at rest, which a failed run's is not
                train_step, env_steps = self.learner.train_step, self.env_steps
                path = save_checkpoint(self.cfg, self.policy_id, state, train_step, env_steps)
        except Exception:
            log.error("%s could not save its final checkpoint:\n%s", self.name, traceback.format_exc())
            return
        log.info(
            "%s: the live model may hold part of the step that failed; saved the state of train step %d (env steps "
            "%d), the last one every rank completed: %s", self.name, train_step, env_steps, path,
        )  # fmt: skip

    def save(self) -> None:
        if self.rank_info.is_main:  # the weights are the same on every rank: one set of files
            super().save()

    def on_best_metric(self, value: float) -> None:
        if self.rank_info.is_main:
            super().on_best_metric(value)

    def _stop_training(self) -> None:
        if self.thread is None and self.rounds is not None:
            self._leave_rounds()  # serial mode: the rounds run on this thread
        super()._stop_training()
        if self.rounds is None or (self.thread is not None and self.thread.is_alive()):
            return
        self.rounds.normalizers.restore_merged()  # drop statistics of batches that no rank will train on
        log.info(
            "Policy %d weights digest: %s (%s, train step %d, policy version %d; env steps %d, this rank's %d)",
            self.policy_id, weights_digest(self.learner.actor_critic.state_dict()), self.rank_info,
            self.learner.train_step, self.learner.policy_version, self.env_steps, self.local_env_steps,
        )  # fmt: skip


def _on_host(obj):
    """A copy of a checkpoint state with every tensor on the CPU (what a broadcast pickles)."""
    if isinstance(obj, Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {key: _on_host(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_on_host(value) for value in obj)
    return obj
