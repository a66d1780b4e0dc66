"""Sample Factory 2's synchronous sampling API: pull trajectories from the sampler in a loop of your own.

    sampler = SyncSamplingAPI(cfg, env_info)  # env_info may be None: one env is created to read it
    sampler.start()
    while (trajectory := sampler.get_trajectories_sync()) is not None:
        samples += samples_per_trajectory(trajectory)
        ...
    sampler.stop()

What this module decides, and why:

- The rollout and inference workers are our sampler-alone mode (``sampler.make_sampler_runner``): the same
  components and runner as training, with the learner replaced by a consumer. They run in their own processes, or
  all in this process with ``--serial_mode=True``.
- The consumer lives in the caller's process, on the runner's own event loop (``LoopSpec.in_main_process``): it
  copies each finished trajectory out of the shared slot buffers into a private TensorDict, gives the slots back to
  the rollout workers and puts the copy on a ``queue.Queue``. Bulk data thus never crosses a process boundary by
  pickling (DESIGN.md "Transport"); only slot indices do, as in training.
- Parallel mode runs the runner's loop in a background thread of the caller's process; ``get_trajectories_sync``
  just waits on the queue. Serial mode has no thread: ``get_trajectories_sync`` itself turns the loop (steps the
  envs, runs inference) until a trajectory is ready, so everything stays on the caller's thread and deterministic.
- The queue is bounded (``max_queued_trajectories``). While it is full, finished trajectories stay in their slots;
  the rollout workers then run out of free slots and pause, so a slow caller slows the sampler down instead of
  growing memory without limit.
- ``get_trajectories_sync`` returns ``None`` after ``stop()``, and once the sampler stopped by itself and everything
  it collected was taken: at ``--train_for_env_steps``/``--train_for_seconds`` (default: practically never), on Ctrl+C
  (when started from the main thread; ``stop()`` gives the caller's SIGINT/SIGTERM handlers back), or when a
  component failed. ``stop()`` stops and joins every process and returns the run's ExperimentStatus.
- The policy is fixed: the weights in ``param_servers`` (read again whenever their version changes, so a caller that
  publishes new weights samples with them), else the experiment's latest checkpoint, else a fresh model.
- One policy: with ``--num_policies`` above 1 the returned TensorDict could not say whose it is; use
  ``sampler.run_sampler(cfg, callback)``, which passes the policy id.

Sample Factory 2's documentation shows this API only through its example; the calls above are the ones it uses.
"""

from __future__ import annotations

import atexit
import collections
import queue
import signal
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.sampling.sampler import TrajectoryConsumer, make_sampler_runner
from sample_factory.algo.utils.wiring import batcher_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Router
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config, PolicyID, StatusCode

# how often a waiting caller checks whether the sampler has finished (only matters at the very end)
POLL_PERIOD = 0.1
# how soon the consumer retries to queue a trajectory while the caller's queue is full
RETRY_PERIOD = 0.005
# the runner stops its components within STOP_TIMEOUT (20 s) and joins processes within 10 s more
JOIN_TIMEOUT = 40.0


class HandoffConsumer(TrajectoryConsumer):
    """The batcher's stand-in in the caller's process: copies, frees the slots, queues the copy for the caller."""

    def __init__(self, policy_id: PolicyID, router: Router, shared: SharedState, handoff: queue.Queue) -> None:
        super().__init__(policy_id, router, shared, self._enqueue)
        self.handoff: queue.Queue = handoff
        self.pending: collections.deque[tuple[list[int], int]] = collections.deque()
        self.retry_scheduled = False

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.pending.append((slots, frames))
        self._flush()

    def _flush(self) -> None:
        """Queue what fits; the rest waits in its slots (backpressure) and is retried shortly."""
        self.retry_scheduled = False
        while self.pending and not self.handoff.full():
            self.deliver(*self.pending.popleft())
        if self.pending and not self.retry_scheduled:
            self.retry_scheduled = True
            self.loop.call_later(RETRY_PERIOD, self._flush)

    def _enqueue(self, policy_id: PolicyID, trajectory: TensorDict) -> None:
        self.handoff.put_nowait(trajectory)  # this loop is the only producer and checked full() first


def _build_handoff(policy_id: PolicyID, handoff: queue.Queue, router: Router, s: SharedState) -> list:
    return [HandoffConsumer(policy_id, router, s, handoff)]


def handoff_specs(cfg: Config, handoff: queue.Queue) -> list[LoopSpec]:
    """One consumer per policy, built on the runner's loop in the main process."""
    return [
        LoopSpec(
            "sampling_api",
            "learner",
            [batcher_name(p)],
            partial(_build_handoff, p, handoff),
            in_main_process=True,
            policy_id=p,
        )
        for p in range(cfg.num_policies)
    ]


class SyncSamplingAPI:
    """Start the sampler, take its trajectories one at a time on your own thread, stop it.

    Args:
        cfg: the full config (parsed flags), as for training.
        env_info: the env's spaces and agent count; ``None`` creates one env to read it.
        buffer_mgr: Sample Factory 2's buffer manager. Not used: the sampler allocates the shared trajectory
            buffers its worker processes map, and hands out private copies; pass ``None``.
        param_servers: ``{policy_id: ParameterServer or PolicyWeights}``; ``None`` samples with the experiment's
            latest checkpoint, or a freshly initialised model when there is none.
        max_queued_trajectories: how many trajectory batches may wait for the caller before the sampler pauses;
            default two per env split (``2 * --num_workers * --worker_num_splits``).
    """

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo | None = None,
        buffer_mgr: Any = None,
        param_servers: Mapping[PolicyID, Any] | None = None,
        max_queued_trajectories: int | None = None,
    ) -> None:
        if buffer_mgr is not None:
            log.info(
                "%s: the given buffer_mgr is not used: the sampler allocates the shared trajectory buffers of its "
                "workers itself and returns private copies of the trajectories",
                type(self).__name__,
            )
        if cfg.num_policies != 1:
            raise ValueError(
                f"SyncSamplingAPI samples one policy, got --num_policies={cfg.num_policies}: use --num_policies=1, "
                "or sampler.run_sampler(cfg, callback), whose callback receives each trajectory's policy id"
            )
        if max_queued_trajectories is None:
            max_queued_trajectories = 2 * cfg.num_workers * max(1, cfg.worker_num_splits)
        if max_queued_trajectories < 1:
            raise ValueError(f"max_queued_trajectories must be at least 1, got {max_queued_trajectories}")
        self.cfg = cfg
        self.env_info = env_info
        self.param_servers = param_servers
        self.handoff: queue.Queue = queue.Queue(maxsize=max_queued_trajectories)
        self.runner = None
        self.status: StatusCode | None = None
        self._serial = bool(cfg.serial_mode)
        self._thread: threading.Thread | None = None
        self._finished = threading.Event()
        self._error: BaseException | None = None
        self._started = False
        self._stopped = False
        self._saved_handlers: dict[int, Any] = {}

    # ---------------------------------------------------------------- life cycle
    def start(self) -> None:
        """Create the workers and begin sampling; returns once they are launched (envs start in the background)."""
        if self._started:
            raise RuntimeError("SyncSamplingAPI.start() was already called: create a new SyncSamplingAPI to restart")
        self._started = True
        specs = partial(handoff_specs, handoff=self.handoff)
        self._saved_handlers = _current_signal_handlers()  # the runner installs its own; stop() gives these back
        self.cfg, self.runner = make_sampler_runner(self.cfg, specs, self.env_info, self.param_servers)
        self._configure_runner(self.runner)
        status = self.runner.init()
        if status != ExperimentStatus.SUCCESS:
            self.status = status
            self._finished.set()
            return
        atexit.register(self.stop)  # a script that forgets stop() still leaves no process behind
        if self._serial:
            self.runner.component.loop.start_components()
            return
        self._thread = threading.Thread(target=self._run_parallel, name="sf_sampling_api_runner", daemon=True)
        self._thread.start()

    def _configure_runner(self, runner: Any) -> None:
        """Hook for subclasses: called with the runner before it starts (e.g. to register handlers on it)."""

    def _run_parallel(self) -> None:
        try:
            self.status = self.runner.run()
        except BaseException as exc:  # re-raised by stop() on the caller's thread
            log.exception("The sampler's runner failed")
            self._error = exc
            self.status = ExperimentStatus.FAILURE
        finally:
            self._finished.set()

    def get_trajectories_sync(self) -> TensorDict | None:
        """Block until the next trajectory batch is ready and return it; ``None`` once the sampler has stopped.

        The TensorDict ([N, T(+1), ...], the ``shared_buffers`` layout) is a private copy the caller may keep.
        """
        if not self._started:
            raise RuntimeError("call SyncSamplingAPI.start() before get_trajectories_sync()")
        if self._serial:
            return self._pump_until_trajectory()
        while True:
            try:
                return self.handoff.get(timeout=POLL_PERIOD)
            except queue.Empty:
                if self._finished.is_set() and self.handoff.empty():
                    return None

    def _pump_until_trajectory(self) -> TensorDict | None:
        """Serial mode: turn the one event loop on the caller's thread until a trajectory is queued or it ends."""
        while True:
            try:
                return self.handoff.get_nowait()
            except queue.Empty:
                pass
            if self._finished.is_set():
                return None
            loop = self.runner.component.loop
            if not loop.running:
                self._finish_serial()
                continue
            loop.run_once()

    def _finish_serial(self) -> None:
        if self._finished.is_set():
            return
        component = self.runner.component
        try:
            component.loop.stop_components()  # closes the envs
            component.print_final_report()
            self.status = component.status
        finally:
            self._finished.set()

    def stop(self) -> StatusCode | None:
        """Stop sampling, end every worker process, release the envs; returns the ExperimentStatus. Idempotent."""
        if not self._started or self._stopped:
            return self.status
        self._stopped = True
        atexit.unregister(self.stop)
        if self._serial:
            self._stop_serial()
        else:
            self._stop_parallel()
        _discard(self.handoff)  # the caller asked to stop: what is still queued is not delivered
        _restore_signal_handlers(self._saved_handlers)
        if self._error is not None:
            raise RuntimeError("the sampler's runner failed (see its traceback above)") from self._error
        return self.status

    def _stop_serial(self) -> None:
        if self._finished.is_set():
            return
        component = self.runner.component
        component.request_stop()
        while component.loop.running:  # the runner gives up on components after its own stop timeout
            component.loop.run_once()
        self._finish_serial()

    def _stop_parallel(self) -> None:
        if self._thread is None:
            return
        if not self._finished.is_set():
            try:
                self.runner.request_stop_threadsafe()
            except Exception:  # the run ended meanwhile and closed its inbox
                log.debug("Stop request not delivered: the sampler had already finished")
        self._thread.join(timeout=JOIN_TIMEOUT)
        if self._thread.is_alive():
            log.error("The sampler did not stop within %.0f s", JOIN_TIMEOUT)

    def __enter__(self) -> SyncSamplingAPI:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _discard(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _current_signal_handlers() -> dict[int, Any]:
    """The caller's SIGINT/SIGTERM handlers (only the main thread has any to save)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}


def _restore_signal_handlers(handlers: dict[int, Any]) -> None:
    """After stop(), Ctrl+C must reach the caller's script again instead of a runner that is gone."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)
