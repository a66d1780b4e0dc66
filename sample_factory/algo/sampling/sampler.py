"""Using the sampler alone: rollout and inference workers with a fixed policy, no learner.

Each finished trajectory is handed to a user function instead of a learner, e.g. to
collect a dataset, evaluate a policy at scale or measure an env with a real model in
the loop. The policy is the weights the caller gives (``param_servers``), else the
experiment's latest checkpoint when one exists, else a freshly initialised model.

    def on_trajectories(policy_id: int, trajectories: TensorDict) -> None: ...
    status = run_sampler(cfg, on_trajectories)

``on_trajectories`` runs in a worker process in parallel mode, so it must be a
module-level function; ``trajectories`` is a private copy ([N, T(+1), ...], the
layout of ``shared_buffers``) that the function may keep. To pull trajectories
from your own loop instead, see ``sync_sampling_api.SyncSamplingAPI``; to put the
sampler's components on an event loop of your own, ``SerialSampler``.

Samplers and learners meet only through the buffers the runner wires: nothing
here imports the learning side.
"""

from __future__ import annotations

import collections
import threading
import traceback
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch

from sample_factory.algo.runners.components import LoopSpec, SharedState
from sample_factory.algo.runners.modes import runner_class
from sample_factory.algo.runners.setup import initial_policy_weights, obtain_env_info, weights_lock
from sample_factory.algo.sampling.loop_specs import build_inference_worker, build_rollout_worker, sampling_loop_specs
from sample_factory.algo.utils.checkpoints import load_latest_checkpoint
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.shared_buffers import (
    PolicyWeights,
    SlotOwners,
    TrajectoryBuffers,
    allocate_trajectories,
    allocate_trajectory_buffers,
    make_slot_owners,
    num_trajectory_slots,
)
from sample_factory.algo.utils.wiring import RUNNER, batcher_name, rollout_worker_name
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Component, EventLoop, Router
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.tensor_dict import TensorDict, copy_slots
from sample_factory.utils.typing import Config, PolicyID, StatusCode

TrajectoryCallback = Callable[[PolicyID, TensorDict], None]
# how many finished episodes SerialSampler keeps for inspection
RECENT_EPISODES = 1000


class TrajectoryConsumer(Component):
    """Takes the batcher's place: copies each finished trajectory out, frees its slot, calls the user."""

    def __init__(self, policy_id: PolicyID, router: Router, shared: SharedState, callback: TrajectoryCallback) -> None:
        super().__init__(batcher_name(policy_id), router)
        wiring = shared.for_policy(policy_id)
        self.cfg, self.env_info, self.policy_id = shared.cfg, wiring.env_info, policy_id
        self.traj, self.slot_owners, self.callback = wiring.traj, wiring.slot_owners, callback
        self.env_steps = 0

    def on_start(self) -> None:
        self.loop.add_timer(1.0, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.deliver(slots, frames)

    def deliver(self, slots: list[int], frames: int) -> None:
        """Copy the slots into a private TensorDict, give the slots back to the sampler, hand the copy over."""
        copy = allocate_trajectories(self.cfg, self.env_info, len(slots), share=False)
        with self.timing.add_time("copy"):
            copy_slots(self.traj, torch.tensor(slots, dtype=torch.int64), copy)
        self.slot_owners.give_back(self.send, slots)
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
    return [TrajectoryConsumer(policy_id, router, s, callback)]


def consumer_specs(cfg: Config, callback: TrajectoryCallback) -> list[LoopSpec]:
    return [
        LoopSpec(f"sampler_p{p}", "learner", [batcher_name(p)], partial(_build_consumer, p, callback), policy_id=p)
        for p in range(cfg.num_policies)
    ]


# ---------------------------------------------------------------- the policy the sampler acts with
def as_policy_weights(server: Any, policy_id: PolicyID, serial: bool) -> PolicyWeights:
    """Our ``PolicyWeights`` behind what a caller passes for a policy: itself, or a ParameterServer's ``weights``.

    In parallel mode the weights travel to the inference processes, so their lock must be a multiprocessing one.
    """
    weights = server if isinstance(server, PolicyWeights) else getattr(server, "weights", None)
    if weights is None and hasattr(server, "weights"):
        raise ValueError(
            f"param_servers[{policy_id}] has published no weights yet: call its init(model) before starting the sampler"
        )
    if not isinstance(weights, PolicyWeights):
        raise TypeError(
            f"param_servers[{policy_id}] is a {type(server).__name__}: pass a model_sharing.ParameterServer or a "
            "shared_buffers.PolicyWeights per policy id"
        )
    if not serial and isinstance(weights.lock, (type(threading.Lock()), type(weights_lock(serial=True)))):
        raise ValueError(
            f"param_servers[{policy_id}] locks with an in-process lock, which worker processes cannot share: create "
            "it for parallel mode (ParameterServer(..., serial_mode=False)) or run with --serial_mode=True"
        )
    return weights


def sampling_policy_weights(
    cfg: Config, env_info: EnvInfo, serial: bool, param_servers: Mapping[PolicyID, Any] | None = None
) -> list[PolicyWeights]:
    """The weights each policy samples with: the caller's, else the latest checkpoint's, else fresh ones."""
    if param_servers:
        missing = [p for p in range(cfg.num_policies) if p not in param_servers]
        if missing:
            raise ValueError(
                f"param_servers has no entry for policies {missing} of --num_policies={cfg.num_policies}: pass one "
                "per policy id, or none to sample with the latest checkpoint (or a fresh model)"
            )
        return [as_policy_weights(param_servers[p], p, serial) for p in range(cfg.num_policies)]
    weights = initial_policy_weights(cfg, env_info, serial)
    for policy_id, policy_weights in enumerate(weights):
        _load_latest_checkpoint(cfg, policy_id, policy_weights)
    return weights


def _load_latest_checkpoint(cfg: Config, policy_id: PolicyID, weights: PolicyWeights) -> None:
    state = load_latest_checkpoint(cfg, policy_id)
    if state is None:
        return
    try:
        weights.publish(state["model"], int(state.get("policy_version", 0)))
    except (KeyError, RuntimeError) as exc:
        raise ValueError(
            f"The latest checkpoint of policy {policy_id} does not fit the model these flags build ({exc}): pass the "
            "model flags it was trained with, or --restart_behavior=restart to sample with a fresh model"
        ) from exc


def make_sampler_runner(
    cfg: Config,
    consumers: Callable[[Config], list[LoopSpec]],
    env_info: EnvInfo | None = None,
    param_servers: Mapping[PolicyID, Any] | None = None,
):
    """``(cfg, runner)`` whose learners are replaced by ``consumers``: the sampler-alone counterpart of make_runner.

    Applies ``--restart_behavior`` like training (so a resumed experiment's config and checkpoints are used),
    then picks the serial or parallel runner.
    """
    from sample_factory.cfg.experiment_files import prepare_experiment_dir

    cfg = prepare_experiment_dir(cfg)
    cfg.save_every_sec = 0
    env_info = env_info or obtain_env_info(cfg)
    weights = sampling_policy_weights(cfg, env_info, cfg.serial_mode, param_servers)
    loops = partial(_sampler_loop_specs, consumers)
    runner = runner_class(cfg)(cfg, loop_specs=loops, env_info=env_info, policy_weights=weights, restarts=False)
    return cfg, runner


def _sampler_loop_specs(consumers: Callable[[Config], list[LoopSpec]], cfg: Config) -> list[LoopSpec]:
    """The consumers where the learners would be, then the sampling loops."""
    return consumers(cfg) + sampling_loop_specs(cfg)


def run_sampler(cfg: Config, callback: TrajectoryCallback) -> StatusCode:
    """Sample with the current (fixed) policy until ``--train_for_env_steps`` or ``--train_for_seconds``."""
    cfg, runner = make_sampler_runner(cfg, partial(consumer_specs, callback=callback))
    status = runner.init()
    return runner.run() if status == ExperimentStatus.SUCCESS else status


# ---------------------------------------------------------------- samplers on an event loop of the caller's
class AbstractSampler:
    """Base of the samplers whose components live on an event loop the caller gives (Sample Factory 2's parameters).

    Keeps what every such sampler is made from; ``init()`` puts the components on the loop, ``stop()`` asks them to
    stop. ``unique_name``: a name for the sampler, for the caller's own bookkeeping.
    """

    def __init__(
        self,
        event_loop: EventLoop,
        buffer_mgr: Any,
        param_servers: Mapping[PolicyID, Any] | None,
        cfg: Config,
        env_info: EnvInfo | None,
        unique_name: str = "sampler",
    ) -> None:
        self.event_loop = event_loop
        self.buffer_mgr = buffer_mgr
        self.param_servers = param_servers
        self.cfg = cfg
        self.env_info = env_info
        self.unique_name = unique_name

    def init(self) -> None:
        """Build the components onto the event loop."""
        raise NotImplementedError(f"{type(self).__name__} must implement init()")

    def stop(self) -> None:
        """Ask every component to stop."""
        raise NotImplementedError(f"{type(self).__name__} must implement stop()")


class Sampler(AbstractSampler):
    """Base of the samplers made of rollout workers and inference workers (``SerialSampler`` here)."""


class ParallelSampler(Sampler):
    """Sample Factory 2's sampler whose workers run in processes wired to the caller's event loop by its own plumbing.

    This package starts worker processes only from a runner, which owns their life cycle (start-up, restarts,
    shutdown); constructing this class raises, naming the ways to sample in parallel.
    """

    def __init__(
        self,
        event_loop: EventLoop,
        buffer_mgr: Any,
        param_servers: Mapping[PolicyID, Any] | None,
        cfg: Config,
        env_info: EnvInfo | None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        raise TypeError(
            "ParallelSampler(event_loop, buffer_mgr, param_servers, cfg, env_info) is Sample Factory 2's wiring of "
            "worker processes to its own event loop, which this package does not have: sample in worker processes "
            "with sync_sampling_api.SyncSamplingAPI(cfg, env_info) or sampler.run_sampler(cfg, callback) and "
            "--serial_mode=False, or put the workers on an event loop of yours with SerialSampler(event_loop, "
            "buffer_mgr, param_servers, cfg, env_info)"
        )


class SerialSampler(Sampler):
    """The sampler's components (rollout and inference workers) on an event loop of the caller's, in this process.

    Sample Factory 2's name and first parameters. For us:

    - ``event_loop``: an :class:`~sample_factory.messaging.event_loop.EventLoop`; ``init()`` adds the components
      and registers their names with its router. It must not already hold a runner: the sampler brings a small
      control component under the runner's name (it starts sampling once every component is ready, counts env
      steps and fans out ``stop()``).
    - ``buffer_mgr``: where trajectories are written. ``None`` allocates our trajectory slots and their ownership
      here; otherwise anything with ``traj`` (slot TensorDict in the ``shared_buffers`` layout) and
      ``slot_owners`` (a ``shared_buffers.SlotOwners``: which rollout worker hands out which slot), e.g. the
      ``SharedState`` of ``runners.setup.make_shared_state``.
    - ``param_servers``: ``{policy_id: ParameterServer or PolicyWeights}``, the weights each policy acts with
      (read again whenever their version changes); ``None`` for a freshly initialised model per policy.
    - ``env_info``: ``None`` creates one env to read it.
    - ``on_trajectories(policy_id, trajectories)`` (ours): called on the loop with each finished trajectory batch
      ([N, T(+1), ...], a private copy). Without it they are kept until ``take_trajectories()``.

    Life cycle: ``init()``; the components start when the loop runs (``EventLoop.run()``/``start_components()``), or
    at once if it already does; ``stop()`` (from the loop's thread, e.g. inside ``on_trajectories``) asks every
    component to stop; the loop ends once all of its components have stopped, and then closes the envs.
    """

    def __init__(
        self,
        event_loop: EventLoop,
        buffer_mgr: Any,
        param_servers: Mapping[PolicyID, Any] | None,
        cfg: Config,
        env_info: EnvInfo | None,
        on_trajectories: TrajectoryCallback | None = None,
    ) -> None:
        if not isinstance(event_loop, EventLoop):
            raise TypeError(f"event_loop must be a sample_factory EventLoop, got {type(event_loop).__name__}")
        if event_loop.router.has_component(RUNNER):
            raise ValueError(
                "SerialSampler: the event loop already has a runner component; give the sampler a loop of its own "
                "(a runner already drives sampling itself)"
            )
        super().__init__(event_loop, buffer_mgr, param_servers, cfg, env_info or obtain_env_info(cfg))
        self.loop = event_loop
        buffers, slot_owners = _trajectory_buffers(buffer_mgr, cfg, self.env_info)
        if param_servers:
            weights = sampling_policy_weights(cfg, self.env_info, True, param_servers)
        else:
            weights = initial_policy_weights(cfg, self.env_info, serial=True)
        self.shared = SharedState(cfg, self.env_info, buffers, slot_owners, weights, serial=True)
        self.trajectories: collections.deque[tuple[PolicyID, TensorDict]] = collections.deque()
        self.on_trajectories = on_trajectories or (lambda p, t: self.trajectories.append((p, t)))
        self.control: _SamplerControl | None = None

    def init(self) -> None:
        """Build the components (our ``components.py`` builders) onto the loop; once only."""
        if self.control is not None:
            return
        cfg, router = self.cfg, self.loop.router
        components: list[Component] = []
        for p in range(cfg.num_policies):
            components += _build_consumer(p, self.on_trajectories, router, self.shared)
            for j in range(cfg.policy_workers_per_policy):
                components += build_inference_worker(p, j, router, self.shared)
        for w in range(cfg.num_workers):
            components += build_rollout_worker(w, router, self.shared)
        rollout_workers = [rollout_worker_name(w) for w in range(cfg.num_workers)]
        self.control = _SamplerControl(router, [c.name for c in components], rollout_workers)
        for component in [self.control, *components]:
            router.component_loops[component.name] = self.loop.name
            self.loop.add_component(component)
            if self.loop.running:
                component.on_start()

    def stop(self) -> None:
        """Ask every component to stop (no-op before ``init()`` or when already stopping)."""
        if self.control is not None:
            self.control.request_stop()

    def take_trajectories(self) -> list[tuple[PolicyID, TensorDict]]:
        """The ``(policy_id, trajectories)`` kept so far (when no ``on_trajectories`` was given), oldest first."""
        taken = list(self.trajectories)
        self.trajectories.clear()
        return taken

    @property
    def env_steps(self) -> dict[PolicyID, int]:
        """Env frames sampled per policy so far."""
        return dict(self.control.env_steps) if self.control else {}

    @property
    def recent_episodes(self) -> list[tuple]:
        """The last finished episodes: ``(policy_id, reward, length, true_objective, extra_stats)``."""
        return list(self.control.episodes) if self.control else []

    @property
    def error(self) -> str | None:
        """The traceback of the first component that failed (the sampler then stops), else None."""
        return self.control.error if self.control else None


def _trajectory_buffers(buffer_mgr: Any, cfg: Config, env_info: EnvInfo) -> tuple[TrajectoryBuffers, SlotOwners]:
    spaces = PolicySpaces(cfg, env_info)
    if buffer_mgr is None:
        num_slots = num_trajectory_slots(cfg, env_info)
        buffers = allocate_trajectory_buffers(cfg, spaces, num_slots, share=False)
        return buffers, make_slot_owners(cfg, env_info, num_slots)
    buffers = getattr(buffer_mgr, "buffers", None)
    if isinstance(buffers, TrajectoryBuffers):  # a SharedState of this package
        return buffers, buffer_mgr.slot_owners
    traj, slot_owners = getattr(buffer_mgr, "traj", None), getattr(buffer_mgr, "slot_owners", None)
    if not isinstance(traj, TensorDict) or not isinstance(slot_owners, SlotOwners):
        raise TypeError(
            f"buffer_mgr ({type(buffer_mgr).__name__}) must have 'traj' (trajectory slot TensorDict) and "
            "'slot_owners' (a shared_buffers.SlotOwners), like runners.setup.make_shared_state(...); or pass None "
            "to allocate them"
        )
    if slot_owners.num_workers != cfg.num_workers or slot_owners.num_slots > len(traj["rewards"]):
        raise ValueError(
            f"buffer_mgr's slot_owners deal {slot_owners.num_slots} slots to {slot_owners.num_workers} workers but "
            f"--num_workers={cfg.num_workers} and traj has {len(traj['rewards'])} slots: build the buffers with "
            "the same config (runners.setup.make_shared_state), or pass None to allocate them"
        )
    return TrajectoryBuffers([traj], spaces), slot_owners


class _SamplerControl(Component):
    """Stands in for the runner next to a SerialSampler: starts sampling, counts, stops."""

    def __init__(self, router: Router, component_names: list[str], rollout_workers: list[str]) -> None:
        super().__init__(RUNNER, router)
        self.component_names = component_names
        self.rollout_workers = rollout_workers
        self.ready: set[str] = set()
        self.stopped: set[str] = set()
        self.stopping = False
        self.sampling = False
        self.env_steps: dict[PolicyID, int] = collections.defaultdict(int)
        self.episodes: collections.deque = collections.deque(maxlen=RECENT_EPISODES)
        self.error: str | None = None

    def on_component_ready(self, name: str) -> None:
        self.ready.add(name)
        if self.ready >= set(self.component_names) and not self.stopping and not self.sampling:
            self.sampling = True
            for worker in self.rollout_workers:
                self.send(worker, "on_begin_sampling")

    def on_heartbeat(self, name: str) -> None:
        """Liveness is the caller's concern on its own loop: nothing to watch here."""

    def on_envs_starting(self, name: str) -> None:
        """Start-up time is the caller's concern too (a hung env blocks its loop anyway)."""

    def on_episodes_finished(self, episodes: list) -> None:
        self.episodes.extend(episodes)

    def on_train_stats(self, policy_id: PolicyID, stats: dict | None, env_steps: int, trained: bool = False) -> None:
        self.env_steps[policy_id] = env_steps

    def on_component_error(self, name: str, tb: str) -> None:
        log.error("SerialSampler: component %s failed, stopping the sampler", name)
        self.error = self.error or tb
        self.request_stop()

    def on_component_stopped(self, name: str, tree: str) -> None:
        self.stopped.add(name)
        if self.stopped >= set(self.component_names):
            self.loop.component_stopped(self.name)

    def request_stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        for name in self.component_names:
            self.send(name, "on_stop_requested")
