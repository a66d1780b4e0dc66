"""Inference worker: one batched forward pass over every request waiting in its inbox.

Requests are ``(worker, split, t, slots)``: the observations and RNN states sit
in the shared trajectory slots at step ``t``. The worker gathers them with one
indexed read per key, runs the policy once, writes actions, log-probs, logits,
values and the policy version at ``t`` and the new RNN state at ``t + 1``, then
tells each rollout worker which of its splits may step. Before each pass it
checks the learner's published version and reloads weights when they changed.

The worker computes on its policy's device (``gpu_utils.policy_device``), the
learner's: on a GPU the published weights live on that device too and a reload
is a device-to-device copy, and the gathered rows reach the GPU through pinned
host buffers and non-blocking copies (``host_staging.StagedGather``).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import defaultdict
from typing import Any

import torch

from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.runners.sf2_constructors import (
    SAMPLING_INSTEAD,
    UNSET,
    init_component_process,
    passed,
    require_package_form,
    worker_loop_spec,
)
from sample_factory.algo.sampling.inference_fast_paths import inference_fast_paths
from sample_factory.algo.sampling.request_batching import RequestBatching
from sample_factory.algo.utils.context import SampleFactoryContext
from sample_factory.algo.utils.cpu_sharing import holds_requests
from sample_factory.algo.utils.host_staging import StagedGather
from sample_factory.algo.utils.wiring import RUNNER, inference_worker_name, rollout_worker_name
from sample_factory.envs.contract_errors import ContractError
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.model.action_distributions import actions_in_buffer_layout
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.model.output_checks import check_action_parameters, explain_failed_forward
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.logging_setup import log
from sample_factory.utils.torch_utils import init_torch_runtime, reuse_freed_memory_for_large_tensors, seed_torch
from sample_factory.utils.typing import Config

HEARTBEAT_PERIOD = 1.0


def _wake_up() -> None:
    """A timer's callback: the loop iteration it ends runs the after-message hook, which serves held requests."""


class InferenceWorkerComponent(Component):
    """An inference worker of one policy (module docstring); ``loop_specs.build_inference_worker`` builds it."""

    def __init__(self, cfg: Config, wiring: PolicyWiring, worker_idx: int, router: Router) -> None:
        """``wiring`` is the policy's share of the run: its spaces, its trajectory buffers, whose slot is whose (to
        drop a dead rollout worker's requests) and its published weights."""
        super().__init__(inference_worker_name(wiring.policy_id, worker_idx), router)
        self.cfg = cfg
        self.wiring = wiring
        self.env_info, self.policy_id = wiring.env_info, wiring.policy_id
        self.traj, self.weights = wiring.traj, wiring.weights
        self.worker_idx = worker_idx
        self.model = None
        self.device = policy_device(cfg, self.policy_id)  # the learner's device too: weights can stay on it
        self.stager = StagedGather(self.device)  # pinned host staging + non_blocking copies on a GPU
        self.version = -1
        self._slots: list[int] = []
        self._steps: list[int] = []
        self._requesters: dict[int, list[int]] = defaultdict(list)
        self.samples_processed = 0
        self.has_action_mask = "action_mask" in self.traj["obs"]
        self.grad_mode = torch.no_grad  # torch.inference_mode where the model passes its check (on_start)
        # whether to hold pending requests a moment for the rollout workers about to ask too (request_batching)
        self.batching: RequestBatching | None = (
            RequestBatching() if holds_requests(cfg, self.env_info.obs_space) else None
        )
        self._wake_at = 0.0  # when the loop's pending wake-up timer fires (0: none)

    def on_start(self) -> None:
        try:
            init_torch_runtime(self.cfg, max_num_threads=1)
            # each pass allocates its normalised observations and activations afresh (0.9 MB and more for 8 Doom
            # frames): from reused heap memory instead of pages the kernel faults in and zeroes at every pass
            reuse_freed_memory_for_large_tensors()
            seed_torch(self.cfg, process_offset=1000 + 100 * self.policy_id + self.worker_idx)
            self.model = create_actor_critic(self.cfg, self.env_info.obs_space, self.env_info.action_space)
            self.model.eval()
            self.model.to(self.device)
            # a private copy: direct module calls and inference mode where they compute what the plain path does
            self.grad_mode = inference_fast_paths(
                self.model, self.env_info.obs_space, get_rnn_size(self.cfg), self.device
            )
            self._maybe_reload_weights()
        except Exception:
            self._report_error()
            return
        self.loop.add_timer(HEARTBEAT_PERIOD, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)

    def on_policy_request(self, worker_idx: int, split: int, t: int, slots: list[int]) -> None:
        if self.batching is not None:
            self.batching.on_request(worker_idx, time.monotonic())
        self._slots.extend(slots)
        self._steps.extend([t] * len(slots))
        self._requesters[worker_idx].append(split)

    def on_policy_requests(self, worker_idx: int, requests: list[tuple[int, int, list[int]]]) -> None:
        """Several splits of one rollout worker at once: ``(split, t, slots)`` each."""
        for split, t, slots in requests:
            self.on_policy_request(worker_idx, split, t, slots)

    def after_messages(self) -> None:
        if not self._slots:
            return
        batching = self.batching
        if batching is not None:
            started = time.monotonic()
            if self._hold_requests(batching, started):
                return
        try:
            with self.timing.add_time("one_step"):
                self._infer()
        except Exception:
            self._report_error()
            return
        for worker_idx, splits in self._requesters.items():
            self.send(rollout_worker_name(worker_idx), "on_actions_ready", splits, self.policy_id)
        if batching is not None:
            done = time.monotonic()
            batching.on_pass(done - started, done)
            for worker_idx in self._requesters:
                batching.on_replied(worker_idx, done)
        self.samples_processed += len(self._slots)
        self._slots.clear()  # the index tensors built in _infer() are copies, so the lists can be reused
        self._steps.clear()
        self._requesters.clear()

    def _hold_requests(self, batching: RequestBatching, now: float) -> bool:
        """Whether to leave the pending requests for a later pass (``RequestBatching``); the loop is woken at the
        deadline by a timer, or earlier by the next request."""
        deadline = batching.wait_until(now)
        if deadline is None:
            return False
        if not now < self._wake_at <= deadline:  # no wake-up pending before the deadline
            self._wake_at = deadline
            self.loop.call_later(deadline - now, _wake_up)
        return True

    def on_rollout_worker_lost(self, worker_idx: int, token: int) -> None:
        """A rollout worker died: forget its requests not yet answered (its replacement asks again)."""
        if self.batching is not None:
            self.batching.forget(worker_idx)
        if self._requesters.pop(worker_idx, None) is not None and self.wiring.slot_owners is not None:
            owner = self.wiring.slot_owners.owner
            keep = [i for i, slot in enumerate(self._slots) if owner(slot) != worker_idx]
            self._slots[:] = [self._slots[i] for i in keep]
            self._steps[:] = [self._steps[i] for i in keep]
        self.send(RUNNER, "on_restart_ack", token, self.name, None)

    def _maybe_reload_weights(self) -> None:
        if self.weights.latest_version() != self.version:
            with self.timing.add_time("update_model"):
                self.version = self.weights.load_into(self.model)

    def _infer(self) -> None:
        # inference mode: no version counters or view tracking either (6-12 % of a CartPole call)
        with self.grad_mode():
            self._infer_in_grad_mode()

    def _infer_in_grad_mode(self) -> None:
        self._maybe_reload_weights()
        traj = self.traj
        slots = torch.tensor(self._slots, dtype=torch.int64)
        steps = torch.tensor(self._steps, dtype=torch.int64)
        with self.timing.add_time("gather"):
            gathered = self.stager.gather({"obs": traj["obs"], "rnn_states": traj["rnn_states"]}, slots, steps)
            obs, rnn_states = gathered["obs"], gathered["rnn_states"]
        with self.timing.add_time("forward"):
            normalized = self.model.normalize_obs(obs)
            mask = obs.get("action_mask") if self.has_action_mask else None
            out = self._forward(normalized, rnn_states, mask)
        with self.timing.add_time("write"):
            out = out.to("cpu") if self.device.type != "cpu" else out
            check_action_parameters(self.model, out["action_logits"], self.policy_id, self.version)
            # a user's model may give Discrete actions as [B, 1] (Sample Factory 2's sample layout): same numbers
            actions = actions_in_buffer_layout(out["actions"], self.env_info.action_space)
            traj["actions"][slots, steps] = actions.to(traj["actions"].dtype)
            traj["log_prob_actions"][slots, steps] = out["log_prob_actions"]
            traj["action_logits"][slots, steps] = out["action_logits"]
            traj["values"][slots, steps] = out["values"]
            traj["policy_version"][slots, steps] = self.version
            traj["rnn_states"][slots, steps + 1] = out["new_rnn_states"]

    def _forward(self, normalized: dict, rnn_states: torch.Tensor, mask: torch.Tensor | None):
        try:
            return self.model(normalized, rnn_states, action_mask=mask)
        except Exception as exc:  # noqa: BLE001  (NaN breaks sampling with a RuntimeError or a ValueError)
            error = explain_failed_forward(self.model, normalized, rnn_states, mask, self.policy_id, self.version)
            if error is None:
                raise
            raise error from exc

    def _report_error(self) -> None:
        exc = sys.exc_info()[1]
        tb = str(exc) if isinstance(exc, ContractError) else traceback.format_exc()
        log.error("%s failed:\n%s", self.name, tb)
        self.send(RUNNER, "on_component_error", self.name, tb)

    def on_stop_requested(self) -> None:
        self.send(RUNNER, "on_component_stopped", self.name, self.timing.tree_str())
        self.loop.component_stopped(self.name)


class InferenceWorker(InferenceWorkerComponent):
    """Sample Factory 2's ``InferenceWorker(event_loop, policy_id, worker_idx, buffer_mgr, param_server,
    inference_queue, cfg, env_info)``, which raises naming the supported ways (``runners.sf2_constructors``);
    ``InferenceWorker(cfg, wiring, worker_idx, router)``, this package's form, builds an ``InferenceWorkerComponent``.
    """

    def __init__(
        self,
        event_loop: Any,
        policy_id: Any = UNSET,
        worker_idx: Any = UNSET,
        buffer_mgr: Any = UNSET,
        param_server: Any = UNSET,
        inference_queue: Any = UNSET,
        cfg: Any = UNSET,
        env_info: Any = UNSET,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        require_package_form(self, event_loop, SAMPLING_INSTEAD)
        values = (event_loop, policy_id, worker_idx, buffer_mgr, param_server, inference_queue, cfg, env_info)
        super().__init__(*passed(*values, *args), **kwargs)


def init_inference_process(sf_context: SampleFactoryContext | None, worker: InferenceWorkerComponent) -> None:
    """Set up the calling process for inference ``worker`` as the parallel runner sets up an inference worker's
    process: the registries of ``sf_context`` and the inference settings (``runners.sf2_constructors``)."""
    spec = worker_loop_spec(worker.name, "inference", worker_idx=worker.worker_idx, policy_id=worker.policy_id)
    init_component_process(sf_context, worker.cfg, spec)
