"""Learner worker: the process role that owns one policy's Learner.

The main thread (the event loop) is told by the batcher which batch buffer is
ready (``on_batch_ready``; the buffers are shared, already on the learner's
device) and prepares it (normalisation, advantages); a background
training thread (``--train_in_background_thread``) runs the SGD epochs, so
preparing batch n+1 overlaps training on batch n. After each training call
the weights are published to the inference workers through shared memory.
Checkpoints are written from the main thread under the same lock as
training, so they never capture a half-updated model: regular ones every
``--save_every_sec`` and on stop, a permanent milestone copy every
``--save_milestones_sec``, and a best-policy checkpoint when the runner reports
a better average of ``--save_best_metric`` (see ``on_best_metric``).

The learner worker and its batcher share a loop and the batch buffers, and talk
only by messages: ``on_batch_ready(batch_idx, env_steps)`` in, ``on_training_done(
batch_idx, release_slots)`` back once a batch may be refilled (see ``wiring``).
"""

from __future__ import annotations

import copy
import math
import os
import queue
import threading
import time
import traceback
from typing import Any

from sample_factory.algo.learning.batch_buffers import LearnerLink
from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.learning.learner_threads import learner_num_threads
from sample_factory.algo.learning.pbt_exchange import (
    donor_weights_file,
    hyperparameters_of,
    load_donor_state,
    load_policy_hyperparameters,
    policy_cfg_file,
    save_donor_state,
    weights_digest,
)
from sample_factory.algo.runners.sf2_constructors import (
    TRAINING_INSTEAD,
    UNSET,
    init_component_process,
    is_package_form,
    passed,
    sf2_wiring_error,
    worker_loop_spec,
)
from sample_factory.algo.utils.checkpoints import (
    CheckpointWriteError,
    load_latest_checkpoint,
    save_best_checkpoint,
    save_checkpoint,
    save_milestone,
)
from sample_factory.algo.utils.context import SampleFactoryContext
from sample_factory.algo.utils.wiring import RUNNER, batcher_name, learner_name
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import memory_stats
from sample_factory.utils.rank_group import RankGroup
from sample_factory.utils.torch_utils import (
    init_torch_runtime,
    reuse_freed_memory_for_large_tensors,
    seed_torch,
)
from sample_factory.utils.typing import Config

HEARTBEAT_PERIOD = 1.0
STOP_JOIN_TIMEOUT_S = 60.0


def warn_if_best_checkpoint_requested(cfg: Config) -> None:
    """Resuming from the best checkpoint is not offered: checkpoints are ordered by train step, so those written
    after an older best one would sort before the existing ones and be deleted by --keep_checkpoints at once."""
    explicit = cfg.cli_args
    if explicit.get("load_checkpoint_kind") == "best":
        log.warning(
            "--load_checkpoint_kind=best is ignored here: resuming training always continues from the latest "
            "checkpoint (the flag chooses what enjoy, eval and the ONNX export load)"
        )


class LearnerWorkerComponent(Component):
    """The learner worker of one policy (module docstring); ``loop_specs.build_learner`` builds it."""

    def __init__(self, cfg: Config, link: LearnerLink, router: Router, serial: bool) -> None:
        """Trains the policy of ``link.wiring`` (a model for its spaces) on the ``link.batches`` its batcher fills,
        and publishes each new version into the policy's weights for the inference workers."""
        wiring = link.wiring
        super().__init__(learner_name(wiring.policy_id), router)
        self.sampler_states = link.sampler_states  # exact resume (serial sync mode): see algo/utils/sampler_state.py
        self.cfg = cfg
        self.env_info, self.policy_id, self.weights = wiring.env_info, wiring.policy_id, wiring.weights
        policy_id = self.policy_id
        self.batches = link.batches  # filled by the batcher, which names the ready one in on_batch_ready
        self.batcher_address = batcher_name(policy_id)  # a name to send to: nothing else is shared
        self.resumed_env_steps = 0  # counted by the run this one resumed (from its checkpoint)
        self.env_steps = 0  # resumed_env_steps + the frames the batcher reported with its latest batch
        self.serial = serial
        self.background = bool(cfg.train_in_background_thread) and not serial
        self.learner: Learner | None = None
        self.train_lock = threading.Lock()
        self.train_queue: queue.Queue = queue.Queue()
        self.thread: threading.Thread | None = None
        self.last_checkpoint_time = time.monotonic()
        self.last_milestone_time = time.monotonic()
        self.best_metric = -math.inf  # best --save_best_metric so far, kept in the checkpoints across restarts
        self.samples_trained = 0
        self.stopping = False
        # False once training or a weights transfer failed half-way: the model is then not saved at stop
        self.consistent = True
        # PBT: +1 whenever the weights are replaced by a donor's; batches prepared before that are not trained on
        self.weights_generation = 0

    # ---------------------------------------------------------------- start-up
    def on_start(self) -> None:
        try:
            init_torch_runtime(self.cfg, max_num_threads=max(1, int(self.cfg.learner_main_loop_num_cores)))
            # on CPU, batches and activations are tensors of tens of MB: avoid re-faulting them in every step
            reuse_freed_memory_for_large_tensors()
            seed_torch(self.cfg, process_offset=self.policy_id)
            self.learner = self._make_learner()
            # how many threads pay depends on the model's compute per sample: decided once it is built
            threads, why = learner_num_threads(self.cfg, self.policy_id, self.serial, self.learner.actor_critic)
            init_torch_runtime(self.cfg, max_num_threads=threads)
            log.info("Learner %d: %d torch thread(s) for training: %s", self.policy_id, threads, why)
            self._restore()
            if self.cfg.with_pbt:
                self._load_pbt_hyperparameters()
            self._check_batch_device()
            self.weights.publish(self.learner.actor_critic.state_dict(), self.learner.policy_version)
        except Exception:
            self._report_error()
            return
        if self.background:
            self.thread = threading.Thread(target=self._training_thread, name=f"{self.name}_train", daemon=True)
            self.thread.start()
        self.loop.add_timer(HEARTBEAT_PERIOD, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)
        self.send(RUNNER, "on_env_steps", self.policy_id, self.env_steps)

    def _make_learner(self) -> Learner:
        # with PBT each policy's hyper-parameters change on their own: in serial mode learners share one cfg
        learner_cfg = copy.copy(self.cfg) if self.cfg.with_pbt else self.cfg
        learner = Learner(learner_cfg, self.env_info, policy_id=self.policy_id)
        learner.ranks = self._rank_group()
        learner.init()
        return learner

    def _rank_group(self) -> RankGroup | None:
        """The process group of this policy's learners on every rank, whose SGD steps average their gradients with
        this one's (a distributed run); None on a single machine."""
        return None

    def _restore(self) -> None:
        state = load_latest_checkpoint(self.cfg, self.policy_id, self.learner.device)
        if state is None:
            return
        warn_if_best_checkpoint_requested(self.cfg)
        self.learner.load_checkpoint_state(state)
        self.resumed_env_steps = self.env_steps = int(state.get("env_steps", 0))
        if self.sampler_states is not None:
            self.sampler_states.offer(state.get("sampler"))
        self.best_metric = float(state.get("best_metric", state.get("best_performance", -math.inf)))  # SF2's name
        log.info(
            "Policy %d resumed at train step %d, env steps %d",
            self.policy_id,
            self.learner.train_step,
            self.env_steps,
        )
        self._resumed_from(state)

    def _resumed_from(self, state: dict) -> None:
        """Called once a checkpoint was loaded at start-up (a subclass may look at what else it holds)."""

    def _check_batch_device(self) -> None:
        """The batch buffers were placed for the learner's device; elsewhere every batch would be copied again."""
        if self.batches.device.type != self.learner.device.type:
            log.warning(
                "%s: the batch buffers are on %s but the learner trains on %s: every batch is copied twice",
                self.name,
                self.batches.device,
                self.learner.device,
            )

    # ---------------------------------------------------------------- batches
    def on_batch_ready(self, batch_idx: int, env_steps: int) -> None:
        """Batch buffer ``batch_idx`` is filled; ``env_steps``: frames the batcher received in this run so far."""
        self._count_env_steps(env_steps)
        if self.stopping:
            self.send(self.batcher_address, "on_training_done", batch_idx, True)
            return
        try:
            with self.timing.add_time("prepare_batch"):
                prepared = self.learner.prepare_batch(self.batches[batch_idx])
        except Exception:
            self._report_error()
            return
        if self.background:
            self.train_queue.put((batch_idx, prepared, self.weights_generation))
        else:
            self.on_training_done(batch_idx, self._train(prepared, self.weights_generation))

    def _count_env_steps(self, env_steps: int) -> None:
        self.env_steps = self.resumed_env_steps + env_steps

    def _train(self, prepared, generation: int) -> dict | None:
        with self.train_lock:
            if generation != self.weights_generation:
                return None  # prepared (values, normalisers) by weights that PBT has replaced since
            with self.timing.add_time("train"):
                stats = self.learner.train(prepared)
            with self.timing.add_time("publish_weights"):
                self.weights.publish(self.learner.actor_critic.state_dict(), self.learner.policy_version)
        return stats

    def _training_thread(self) -> None:
        # no init_torch_runtime here: torch's thread count is per process, so setting it in this thread would undo
        # --learner_main_loop_num_cores for the whole learner
        while True:
            item = self.train_queue.get()
            if item is None:
                return
            batch_idx, prepared, generation = item
            try:
                stats = self._train(prepared, generation)
            except Exception:
                self.loop.post(self.name, "on_training_error", traceback.format_exc())
                return
            # through the inbox (not the local deque) so a loop blocked waiting for messages wakes up
            self.loop.post(self.name, "on_training_done", batch_idx, stats)

    def on_training_error(self, tb: str) -> None:
        self.consistent = False
        log.error("%s training failed:\n%s", self.name, tb)
        self.send(RUNNER, "on_component_error", self.name, tb)

    def on_training_done(self, batch_idx: int, stats: dict | None) -> None:
        self.samples_trained += self.batches.samples_per_batch
        # exact resume: once the target is reached the sampler stays at rest, so the final checkpoint can hold it
        at_target = self.sampler_states is not None and self.env_steps >= self.cfg.train_for_env_steps
        self.send(self.batcher_address, "on_training_done", batch_idx, not at_target)
        if stats is not None:
            stats.update(memory_stats("learner", self.learner.device))
        self.send(RUNNER, "on_train_stats", self.policy_id, stats, self.env_steps, True)
        if self._checkpoint_due() or self._milestone_due():
            try:
                self.save()
            except CheckpointWriteError:
                self._report_error()

    # ---------------------------------------------------------------- checkpoints and shutdown
    def _checkpoint_due(self) -> bool:
        return time.monotonic() - self.last_checkpoint_time >= self.cfg.save_every_sec

    def _milestone_due(self) -> bool:
        period = self.cfg.save_milestones_sec
        return period > 0 and time.monotonic() - self.last_milestone_time >= period

    def _checkpoint_state(self) -> dict:
        """The learner's state plus what only this worker knows; call with ``train_lock`` held."""
        state = self.learner.get_checkpoint_state()
        state["env_steps"] = self.env_steps
        state["best_metric"] = self.best_metric
        if self.sampler_states is not None:  # None unless the sampler is at rest (the batcher's check included)
            sampler = self.sampler_states.capture()
            if sampler is not None:
                state["sampler"] = sampler
        return state

    def save(self) -> None:
        """A regular checkpoint, and a milestone copy of it when one is due."""
        if self.learner is None:
            return
        with self.train_lock, self.timing.add_time("save_checkpoint"):
            train_step, env_steps = self.learner.train_step, self.env_steps
            path = save_checkpoint(self.cfg, self.policy_id, self._checkpoint_state(), train_step, env_steps)
            if self._milestone_due():
                milestone = save_milestone(self.cfg, self.policy_id, path)
                self.last_milestone_time = time.monotonic()
                log.info("Saved milestone %s", milestone)
        self.last_checkpoint_time = time.monotonic()
        log.debug("Saved %s", path)

    def on_best_metric(self, value: float) -> None:
        """The runner's current average of ``--save_best_metric`` (sent every ``--save_best_every_sec``).

        A best checkpoint is written when the value beats every earlier one, once ``--save_best_after`` env steps
        are done: early averages over a handful of lucky episodes would otherwise set a bar nothing later beats.
        """
        if self.learner is None or self.stopping or not math.isfinite(value):
            return
        if self.env_steps < self.cfg.save_best_after or value <= self.best_metric:
            return
        try:
            with self.train_lock, self.timing.add_time("save_best"):
                self.best_metric = value
                train_step, env_steps = self.learner.train_step, self.env_steps
                metric = self.cfg.save_best_metric
                state = self._checkpoint_state()
                path = save_best_checkpoint(self.cfg, self.policy_id, state, train_step, env_steps, metric, value)
        except Exception:
            self._report_error()
            return
        log.info("Policy %d: new best %s %.3f, saved %s", self.policy_id, self.cfg.save_best_metric, value, path)

    def on_save_requested(self) -> None:
        self.save()

    # ---------------------------------------------------------------- population-based training
    def _load_pbt_hyperparameters(self) -> None:
        """Resume (or a hand-written file): this policy's ``policy_NN_cfg.json`` overrides the command line."""
        params = load_policy_hyperparameters(self.cfg, self.policy_id, hyperparameters_of(self.cfg))
        if params is not None:
            self.learner.set_hyperparameters(params)
            path = policy_cfg_file(self.cfg, self.policy_id)
            log.info("PBT: policy %d loaded its hyper-parameters from %s", self.policy_id, path)

    def on_pbt_hyperparameters(self, params: dict) -> None:
        """New hyper-parameters from the runner's PBT; they apply from the next training step."""
        if self.learner is None:
            return
        with self.train_lock:
            self.learner.set_hyperparameters(params)

    def on_pbt_share_weights(self, recipient: int, recipient_params: dict) -> None:
        """Donor side of a replacement: save this policy's state for ``recipient`` and tell its learner."""
        if self.learner is None or self.stopping:
            return
        path = donor_weights_file(self.cfg, self.policy_id, recipient)
        try:
            with self.train_lock, self.timing.add_time("pbt_share_weights"):
                digest = save_donor_state(self.learner.actor_critic, self.learner.optimizer, path)
        except Exception:
            self._report_error()
            return
        log.info("PBT: policy %d saved its weights for policy %d (digest %s)", self.policy_id, recipient, digest)
        self.send(learner_name(recipient), "on_pbt_take_weights", self.policy_id, path, recipient_params, digest)

    def on_pbt_take_weights(self, donor: int, path: str, params: dict, donor_digest: str) -> None:
        """Recipient side: between two training steps, load the donor's state and hyper-parameters, publish them."""
        if self.learner is None or self.stopping:
            return
        try:
            with self.train_lock, self.timing.add_time("pbt_take_weights"):
                self.learner.load_donor_state(load_donor_state(path, self.learner.device), self.cfg.max_policy_lag + 1)
                self.learner.set_hyperparameters(params)
                self.weights_generation += 1
                self.weights.publish(self.learner.actor_critic.state_dict(), self.learner.policy_version)
                digest = weights_digest(self.learner.actor_critic.state_dict())
            os.remove(path)
        except Exception:
            self.consistent = False
            self._report_error()
            return
        log.info(
            "PBT: policy %d now trains from the weights of policy %d (digest %s, donor's %s)",
            self.policy_id, donor, digest, donor_digest,
        )  # fmt: skip

    def _report_error(self) -> None:
        tb = traceback.format_exc()
        log.error("%s failed:\n%s", self.name, tb)
        self.send(RUNNER, "on_component_error", self.name, tb)

    def on_stop_requested(self, save: bool = True) -> None:
        self.stopping = True
        self._stop_training()
        if save and not self.consistent:
            self._save_after_failure()
        elif save:
            try:
                self.save()
            except Exception:
                log.error("%s could not save its final checkpoint:\n%s", self.name, traceback.format_exc())
        tree = _join_trees(self.timing.tree_str(), self._learner_tree())
        self.send(RUNNER, "on_component_stopped", self.name, tree)
        self.loop.component_stopped(self.name)

    def _save_after_failure(self) -> None:
        """The final checkpoint when training or a weights transfer failed half-way: none (the model may be left
        half-updated); a subclass that kept a consistent copy saves that."""
        log.error("%s: not saving a final checkpoint, its model was left half-updated by the error above; the "
                  "latest checkpoint on disk is its last consistent state", self.name)  # fmt: skip

    def _stop_training(self) -> None:
        """Let the training thread finish its queue and end (the final checkpoint must not race a training step)."""
        if self.thread is not None:
            self.train_queue.put(None)
            self.thread.join(timeout=STOP_JOIN_TIMEOUT_S)

    def _learner_tree(self) -> str:
        """The learner keeps one Timing per thread: batch preparation (main) and training (background)."""
        trees = [getattr(self.learner, name, None) for name in ("batch_timing", "timing")]
        return _join_trees(*(t.tree_str() for t in trees if t is not None))


def _join_trees(*trees: str) -> str:
    return "\n".join(t for t in trees if t)


class LearnerWorker(LearnerWorkerComponent):
    """Sample Factory 2's ``LearnerWorker(evt_loop, cfg, env_info, buffer_mgr, batcher, policy_id)``: its parameters
    are refused with the way to build a run instead (``runners.sf2_constructors``).

    This package's form, ``LearnerWorker(cfg, link, router, serial)``, builds a ``LearnerWorkerComponent``.
    """

    def __init__(
        self,
        evt_loop: Any,
        cfg: Any = UNSET,
        env_info: Any = UNSET,
        buffer_mgr: Any = UNSET,
        batcher: Any = UNSET,
        policy_id: Any = UNSET,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        if not is_package_form(evt_loop):
            parameters = "evt_loop, cfg, env_info, buffer_mgr, batcher, policy_id"
            raise sf2_wiring_error("LearnerWorker", parameters, TRAINING_INSTEAD)
        super().__init__(*passed(evt_loop, cfg, env_info, buffer_mgr, batcher, policy_id, *args), **kwargs)


def init_learner_process(sf_context: SampleFactoryContext | None, learner_worker: LearnerWorkerComponent) -> None:
    """Set up the calling process for ``learner_worker`` as the parallel runner sets up a learner's process: the
    registries of ``sf_context`` and the learner's process settings (``runners.sf2_constructors``)."""
    worker = learner_worker
    spec = worker_loop_spec(worker.name, "learner", policy_id=worker.policy_id)
    init_component_process(sf_context, worker.cfg, spec, worker.env_info.obs_space)
