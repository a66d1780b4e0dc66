"""The runner's component on one rank of a distributed run: a :class:`RunnerComponent` that stops with its peers.

Each rank's runner runs its rank's pipeline like a single-machine runner; the env steps its learners report are the
run's (every rank's), so each runner reaches ``--train_for_env_steps`` in the same training round as the others.
What it adds:

- one experiment, one folder: only rank 0 writes summaries (TensorBoard, wandb) and the ``done`` marker;
- a stop it decides (interrupt, failure, target, ``--train_for_seconds``) is published for the other ranks before its
  learners leave the training rounds (``rank_watch.StopNotice``); a stop of another rank, or a rank that falls silent
  (``RankWatch``) or that the learners' rounds report stopping, stops this rank too, with the other rank's status
  and a message naming it.
"""

from __future__ import annotations

from sample_factory.algo.runners.hooks import UserHooks
from sample_factory.algo.runners.rank_setup import RankContext
from sample_factory.algo.runners.rank_watch import RankWatch, StopNotice
from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.algo.runners.startup import RunTimeline
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, Router
from sample_factory.utils.distributed import log_file_name
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config

# rank 0 serves the store: at exit it waits this long for the other ranks to leave it
WAIT_FOR_RANKS_TO_LEAVE_S = 10.0
_STATUS_WORDS = {
    ExperimentStatus.SUCCESS: "finished",
    ExperimentStatus.FAILURE: "failed",
    ExperimentStatus.INTERRUPTED: "was interrupted",
}


class RankRunnerComponent(RunnerComponent):
    """The runner's component of one rank (module docstring)."""

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        router: Router,
        hooks: UserHooks | None,
        ranks: RankContext,
        timeline: RunTimeline | None = None,
    ) -> None:
        super().__init__(cfg, env_info, router, hooks, timeline)
        self.ranks = ranks
        self.watch = RankWatch(ranks.info, ranks.store, self._post_notice, float(cfg.distributed_timeout))
        self.stopped_by_peer = False
        self.marked_done = False

    def attach(self, loop: EventLoop, specs) -> None:
        super().attach(loop, specs)
        self.watch.start()

    def _open_outputs(self) -> None:
        if self.ranks.info.is_main:
            super()._open_outputs()

    def _mark_done(self) -> None:
        self.marked_done = True
        if self.ranks.info.is_main:
            super()._mark_done()

    # ---------------------------------------------------------------- stopping with the other ranks
    def request_stop(self, save: bool = True) -> None:
        if not self.stopping and not self.stopped_by_peer:
            self.watch.publish_stop(StopNotice(self.ranks.info.rank, self.status, self._own_reason(), self.marked_done))
        super().request_stop(save)

    def _own_reason(self) -> str:
        if self.marked_done:
            return "reached the end of training"
        words = _STATUS_WORDS.get(self.status, f"stopped with status {self.status}")
        log_name = log_file_name(self.ranks.info)
        return words if self.status == ExperimentStatus.SUCCESS else f"{words} (see its {log_name})"

    def _post_notice(self, notice: StopNotice) -> None:
        """Called on the watch's thread: hand the notice to the runner's loop."""
        self.loop.post(RUNNER, "on_rank_notice", notice.rank, notice.status, notice.reason, notice.done)

    def on_rank_notice(self, rank: int, status: int, reason: str, done: bool) -> None:
        """Rank ``rank`` stopped (or is gone): this rank stops too, with its status."""
        if self.stopping:
            return
        message = f"Rank {rank} {reason}: stopping {self.ranks.info} too"
        if status == ExperimentStatus.SUCCESS:
            log.info("%s", message)
        else:
            log.error("%s", message)
            self.status = status
        if done:
            self._mark_done()
        self.stopped_by_peer = True
        self.request_stop()

    def on_ranks_stopping(self, ranks: list[int]) -> None:
        """A learner's training round saw ``ranks`` stop; their notices say why (when the store still answers)."""
        if self.stopping:
            return
        try:
            notices = self.watch.notices()
        except Exception:  # the store's host is gone
            notices = {}
        for rank in ranks:
            if rank in notices:
                notice = notices[rank]
                self.on_rank_notice(rank, notice.status, notice.reason, notice.done)
                return
        self.on_rank_notice(ranks[0], ExperimentStatus.FAILURE, "stopped training (see its log)", False)

    def finish(self) -> None:
        # after a failure the other ranks fail anyway: no point in keeping the store up for them
        serves = self.ranks.info.is_main and self.status != ExperimentStatus.FAILURE
        wait = WAIT_FOR_RANKS_TO_LEAVE_S if serves else 0.0
        self.watch.leave(wait_for_others_s=wait)
        super().finish()
