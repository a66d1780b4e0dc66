"""Using the sampler alone: rollout and inference workers with a fixed policy, no learner.

Each finished trajectory is handed to a user function instead of a learner, e.g. to
collect a dataset, evaluate a policy at scale or measure an env with a real model in
the loop. The policy is the freshly initialised model, or the weights of the
experiment's latest checkpoint when one exists.

    def on_trajectories(policy_id: int, trajectories: TensorDict) -> None: ...
    status = run_sampler(cfg, on_trajectories)

``on_trajectories`` runs in a worker process in parallel mode, so it must be a
module-level function; ``trajectories`` is a private copy ([N, T(+1), ...], the
layout of ``shared_buffers``) that the function may keep.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import torch

from sample_factory.algo.learning.batcher import copy_slots
from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.event_loop import Component, Router
from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.algo.utils.shared_buffers import allocate_trajectories
from sample_factory.algo.utils.tensor_dict import TensorDict
from sample_factory.algo.utils.wiring import RUNNER, batcher_name
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, PolicyID, StatusCode

TrajectoryCallback = Callable[[PolicyID, TensorDict], None]


class TrajectoryConsumer(Component):
    """Takes the batcher's place: copies each finished trajectory out, frees its slot, calls the user."""

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        policy_id: PolicyID,
        router: Router,
        traj: TensorDict,
        free_slots,
        callback: TrajectoryCallback,
    ) -> None:
        super().__init__(batcher_name(policy_id), router)
        self.cfg, self.env_info, self.policy_id = cfg, env_info, policy_id
        self.traj, self.free_slots, self.callback = traj, free_slots, callback
        self.env_steps = 0

    def on_start(self) -> None:
        self.loop.add_timer(1.0, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        copy = allocate_trajectories(self.cfg, self.env_info, len(slots), share=False)
        with self.timing.add_time("copy"):
            copy_slots(self.traj, torch.tensor(slots, dtype=torch.int64), copy)
        self.free_slots.put_many(slots)
        self.env_steps += frames
        try:
            with self.timing.add_time("callback"):
                self.callback(self.policy_id, copy)
        except Exception:
            tb = traceback.format_exc()
            log.error("%s: the trajectory callback failed:\n%s", self.name, tb)
            self.send(RUNNER, "on_component_error", self.name, tb)
        self.send(RUNNER, "on_train_stats", self.policy_id, None, self.env_steps)

    def on_stop_requested(self) -> None:
        self.send(RUNNER, "on_component_stopped", self.name, self.timing.tree_str())
        self.loop.component_stopped(self.name)


def _build_consumer(policy_id: PolicyID, callback: TrajectoryCallback, router: Router, s: SharedState) -> list:
    return [TrajectoryConsumer(s.cfg, s.env_info, policy_id, router, s.traj, s.free_slots, callback)]


def consumer_specs(cfg: Config, callback: TrajectoryCallback) -> list[LoopSpec]:
    from functools import partial

    return [
        LoopSpec(f"sampler_p{p}", "learner", [batcher_name(p)], partial(_build_consumer, p, callback))
        for p in range(cfg.num_policies)
    ]


def run_sampler(cfg: Config, callback: TrajectoryCallback) -> StatusCode:
    """Sample with the current (fixed) policy until ``--train_for_env_steps`` or ``--train_for_seconds``."""
    from functools import partial

    from sample_factory.train import make_runner

    cfg.save_every_sec = 0
    cfg, runner = make_runner(cfg, learner_specs=partial(consumer_specs, callback=callback))
    status = runner.init()
    return runner.run() if status == ExperimentStatus.SUCCESS else status
