"""The sampling hot path on one in-process event loop, with envs and a policy whose every output is predictable.

Rollout workers, inference workers and (optionally) the batcher are the real components; they talk through a
:class:`Router` over one :class:`LocalInbox`, so a test runs with no process and a deterministic message order.

- :class:`TraceEnv` / :class:`TraceMultiAgentEnv`: agent ``a`` of env ``e`` observes ``[e, a, episode, tau, k]``
  (``tau``: steps into the episode, ``k``: steps the env has taken since it was created). Every other quantity of
  a step is a function of that observation (reward, end of episode, truncation, whether the agent is active), and
  the env records the action it received at each ``k``.
- :class:`EchoPolicy`: actions, values, log-probs and logits are functions of the observation, the policy id and
  the loaded weights' version; the new RNN state counts steps since the episode start and remembers ``k``.

:func:`trajectory_problems` then checks a finished trajectory slot exactly: the observation, action, reward, done
and RNN state of step ``t`` must all describe the same env step. A write at a shifted time index or into another
actor's slot breaks at least one of these equalities.
"""

from __future__ import annotations

import collections
import inspect
import textwrap
from collections import defaultdict
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.sampling.inference_worker import InferenceWorker
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.shared_buffers import (
    SlotOwners,
    TrajectoryBuffers,
    allocate_trajectories,
    num_trajectory_slots,
)
from sample_factory.algo.utils.wiring import (
    RUNNER,
    batcher_name,
    inference_worker_name,
    learner_name,
    rollout_worker_name,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo, extract_env_info
from sample_factory.envs.env_utils import register_env
from sample_factory.messaging.event_loop import Component, EventLoop, LocalInbox, Router
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.tensor_dict import TensorDict

ENV_NAME = "hot_path_trace_env"
NUM_ACTIONS = 3
OBS_SPACE = spaces.Box(-1e6, 1e6, (5,), dtype=np.float32)
E, A, EPISODE, TAU, K = range(5)  # observation fields


# ---------------------------------------------------------------- what each step must look like
def episode_length(env_id: int) -> int:
    """2, 3 or 4 steps: with rollouts of 4, episodes end inside rollouts and cross their boundaries."""
    return 2 + env_id % 3


def truncates(env_id: int) -> bool:
    """Odd envs end their episodes by truncation (time-out), even ones by termination."""
    return env_id % 2 == 1


def step_reward(env_id: int, agent: int, k: int) -> float:
    return 1000.0 * env_id + 100.0 * agent + k


def is_active(agent: int, k: int) -> bool:
    """Agent 0 always acts; agent 1 of a multi-agent env sits out every third step."""
    return agent == 0 or k % 3 != 1


def policy_action(env_id: int, agent: int, k: int, policy_id: int) -> int:
    return (env_id + agent + k + policy_id) % NUM_ACTIONS


# ---------------------------------------------------------------- envs
class TraceEnv(gym.Env):
    """Single agent; see the module docstring. ``received[k]`` is the action applied at env step ``k``."""

    observation_space = OBS_SPACE
    action_space = spaces.Discrete(NUM_ACTIONS)

    def __init__(self, env_id: int) -> None:
        self.env_id = env_id
        self.episode, self.tau, self.k = -1, 0, 0
        self.received: list[int] = []

    def _obs(self, agent: int = 0) -> np.ndarray:
        return np.array([self.env_id, agent, self.episode, self.tau, self.k], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.episode, self.tau = self.episode + 1, 0
        return self._obs(), {}

    def _advance(self, action: Any) -> tuple[float, bool]:
        assert len(self.received) == self.k, "an env step without its action"
        self.received.append(int(action))
        reward = step_reward(self.env_id, 0, self.k)
        self.k, self.tau = self.k + 1, self.tau + 1
        return reward, self.tau == episode_length(self.env_id)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward, ended = self._advance(action)
        cut = ended and truncates(self.env_id)
        return self._obs(), reward, ended and not cut, cut, {}

    def close(self) -> None:
        pass


class TraceMultiAgentEnv(TraceEnv):
    """Two agents that share the env's clock; resets itself when the episode ends (multi-agent protocol)."""

    num_agents = 2
    is_multiagent = True

    def __init__(self, env_id: int) -> None:
        super().__init__(env_id)
        self.received_by_agent: list[list[int]] = [[], []]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[list, list[dict]]:
        super().reset(seed=seed)
        return [self._obs(0), self._obs(1)], [{}, {}]

    def step(self, actions: list) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        k = self.k
        for agent in range(2):
            self.received_by_agent[agent].append(int(actions[agent]))
        _, ended = self._advance(actions[0])
        rewards = [step_reward(self.env_id, agent, k) for agent in range(2)]
        infos = [{"is_active": is_active(agent, k)} for agent in range(2)]
        if ended:
            self.episode, self.tau = self.episode + 1, 0
        cut = ended and truncates(self.env_id)
        return [self._obs(0), self._obs(1)], rewards, [ended and not cut] * 2, [cut] * 2, infos


# ---------------------------------------------------------------- policy and weights
class EchoPolicy:
    """Stands in for the actor-critic: every output names the observation, policy and weights it came from.

    ``action_logits`` = ``[version, policy_id, k]``; ``values`` = ``1000 e + 100 a + k``; ``log_prob_actions`` =
    ``tau``; the new RNN state = ``[old[0] + 1, k]``, so ``rnn_states[t]`` is ``[tau, k - 1]`` inside an episode
    and zeros at its start, provided states are reset at episode starts and carried forward at ``t + 1``.
    """

    def __init__(self, policy_id: int) -> None:
        self.policy_id = policy_id
        self.version = -1
        self.forward_calls: list[int] = []  # batch size of each call

    def normalize_obs(self, obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return obs

    def __call__(self, obs: dict, rnn_states: torch.Tensor, action_mask: Any = None) -> dict[str, torch.Tensor]:
        o = obs["obs"]
        self.forward_calls.append(len(o))
        e, a, k = o[:, E], o[:, A], o[:, K]
        n = len(o)
        return {
            "actions": (e + a + k + self.policy_id).long() % NUM_ACTIONS,
            "log_prob_actions": o[:, TAU].clone(),
            "action_logits": torch.stack(
                [torch.full((n,), float(self.version)), torch.full((n,), 1.0 * self.policy_id), k], 1
            ),
            "values": 1000.0 * e + 100.0 * a + k,
            "new_rnn_states": torch.stack([rnn_states[:, 0] + 1.0, k], 1),
        }


class FakeWeights:
    """The learner's published weights, reduced to a version counter; loading stamps it on the policy."""

    def __init__(self, version: int = 0) -> None:
        self.version = version
        self.loads: list[int] = []

    def latest_version(self) -> int:
        return self.version

    def load_into(self, model: EchoPolicy) -> int:
        model.version = self.version
        self.loads.append(self.version)
        return self.version


# ---------------------------------------------------------------- recording components
class Recorder(Component):
    """Accepts any message and keeps it: stands in for the runner (and, where needed, learners)."""

    def __init__(self, name: str, router: Router) -> None:
        super().__init__(name, router)
        self.messages: list[tuple[str, tuple]] = []

    def __getattr__(self, slot: str):
        if slot.startswith("_"):
            raise AttributeError(slot)
        return lambda *args: self.messages.append((slot, args))

    def received(self, slot: str) -> list[tuple]:
        return [args for name, args in self.messages if name == slot]


SCRIBBLE = -7.0


class RecordingBatcher(Component):
    """Stands in for a policy's batcher: copies each finished slot, scribbles over it and frees it at once.

    The scribble makes any read of a slot after its release visible (e.g. a carry-over taken from a recycled slot).
    Slots are freed in reverse order so that actors do not get their old slots back.
    """

    def __init__(self, policy_id: int, router: Router, traj: TensorDict, slot_owners: SlotOwners) -> None:
        super().__init__(batcher_name(policy_id), router)
        self.policy_id = policy_id
        self.traj = traj
        self.slot_owners = slot_owners
        self.trajectories: list[dict] = []
        self.frames = 0

    def on_new_trajectories(self, slots: list[int], frames: int) -> None:
        self.frames += frames
        for slot in slots:
            self.trajectories.append(clone_slot(self.traj, slot))
            scribble(self.traj, slot)
        self.slot_owners.give_back(self.send, list(reversed(slots)))


def clone_slot(traj: TensorDict, slot: int) -> dict:
    out = {key: value[slot].clone() for key, value in traj.items() if key != "obs"}
    out["obs"] = traj["obs"]["obs"][slot].clone()
    return out


def scribble(traj: TensorDict, slot: int) -> None:
    for key, value in traj.items():
        if key == "obs":
            value["obs"][slot] = SCRIBBLE
        elif value.dtype == torch.bool:
            value[slot] = False
        else:
            value[slot] = value.new_tensor(SCRIBBLE).to(value.dtype)


class TrackedSlots(SlotOwners):
    """The run's slot ownership, refusing a slot that is released twice, taken while not free, or given to a worker
    that does not own it. ``free`` holds the slots released and not yet taken again (in flight or in a free list)."""

    def __init__(self, num_slots: int, num_workers: int, actors_per_worker: int) -> None:
        super().__init__(num_slots, num_workers, actors_per_worker)
        self.free: set[int] = set(range(num_slots))
        self.taken_total = 0

    def give_back(self, send, slots) -> None:
        for slot in slots:
            assert 0 <= slot < self.num_slots, f"slot {slot} does not exist"
            assert slot not in self.free, f"slot {slot} released while already free"
            self.free.add(slot)
        super().give_back(send, slots)

    def watch(self, worker: RolloutWorker) -> None:
        """Replace ``worker``'s private free list by one that checks every take and every return."""
        worker.free_slots = TrackedFreeList(self, worker.worker_idx, worker.free_slots)


class TrackedFreeList(collections.deque):
    """A rollout worker's free list that reports to :class:`TrackedSlots`."""

    def __init__(self, tracker: TrackedSlots, worker_idx: int, initial) -> None:
        super().__init__(initial)
        self.tracker = tracker
        self.worker_idx = worker_idx

    def extend(self, slots) -> None:
        slots = list(slots)
        for slot in slots:
            owner = self.tracker.owner(slot)
            assert owner == self.worker_idx, f"slot {slot} of worker {owner} given to worker {self.worker_idx}"
        super().extend(slots)

    def popleft(self) -> int:
        slot = super().popleft()
        assert slot in self.tracker.free, f"slot {slot} handed out while not free"
        self.tracker.free.discard(slot)
        self.tracker.taken_total += 1
        return slot


# ---------------------------------------------------------------- the wired-up hot path
def hot_path_cfg(**overrides: Any) -> AttrDict:
    """Rollouts of 4, RNN state of 2 (the echo policy's counters), 1 worker x 4 envs in 2 splits, seed 1."""
    cfg = default_cfg(env=ENV_NAME)
    settings = dict(
        rollout=4,
        use_rnn=True,
        rnn_size=2,
        rnn_type="gru",
        rnn_num_layers=1,
        num_workers=1,
        num_envs_per_worker=4,
        worker_num_splits=2,
        num_policies=1,
        policy_workers_per_policy=1,
        batch_size=8,
        num_batches_per_epoch=1,
        num_batches_to_accumulate=1,
        seed=1,
        device="cpu",
        decorrelate_experience_max_seconds=0,
        # the envs check each action against the echo policy's: no random steps first (test_decorrelation.py)
        decorrelate_envs_on_one_worker=False,
        batched_sampling=False,
        async_rl=True,
    )
    settings.update(overrides)
    for key, value in settings.items():
        setattr(cfg, key, value)
    return cfg


class HotPath:
    """Rollout workers, echo-policy inference workers, batchers and learners on one loop.

    ``batcher_factory(hot, policy_id)`` and ``learner_factory(hot, policy_id)`` build the components named
    ``batcher_p{policy_id}`` and ``learner_p{policy_id}``; by default a :class:`RecordingBatcher` and a
    :class:`Recorder`.
    """

    def __init__(
        self, cfg, multi_agent: bool = False, batcher_factory=None, learner_factory=None, sampler_states=None
    ) -> None:
        """Registers the trace env in a fresh global context: tests use the ``clean_context`` fixture to drop it.

        ``sampler_states``: a ``SamplerStateExchange`` given to every rollout worker (exact resume).
        """
        self.cfg = cfg
        env_cls = TraceMultiAgentEnv if multi_agent else TraceEnv
        self.envs: dict[int, TraceEnv] = {}
        reset_global_context()
        register_env(ENV_NAME, self._make_env)
        self.env_info: EnvInfo = extract_env_info(env_cls(-1), cfg)
        assert cfg.use_rnn and cfg.rnn_size == 2
        self.num_slots = num_trajectory_slots(cfg, self.env_info)
        self.traj = allocate_trajectories(cfg, self.env_info, self.num_slots, share=False)
        self.buffers = TrajectoryBuffers([self.traj], PolicySpaces(cfg, self.env_info))
        assert self.traj["rnn_states"].shape[-1] == 2, "the echo policy needs an RNN state of exactly 2 values"
        actors_per_worker = cfg.num_envs_per_worker * self.env_info.num_agents
        self.free_slots = TrackedSlots(self.num_slots, cfg.num_workers, actors_per_worker)
        self._env_cls = env_cls

        names = [RUNNER]
        names += [rollout_worker_name(w) for w in range(cfg.num_workers)]
        names += [inference_worker_name(p, 0) for p in range(cfg.num_policies)]
        names += [batcher_name(p) for p in range(cfg.num_policies)]
        names += [learner_name(p) for p in range(cfg.num_policies)]
        self.router = Router({name: "main" for name in names}, {"main": LocalInbox()})
        self.loop = EventLoop("main", self.router.inboxes["main"], self.router, idle_timeout=0.0)
        self.runner = Recorder(RUNNER, self.router)
        self.loop.add_component(self.runner)

        self.weights = [FakeWeights(version=10 * (p + 1)) for p in range(cfg.num_policies)]
        self.policies = [EchoPolicy(p) for p in range(cfg.num_policies)]
        self.inference = []
        for p in range(cfg.num_policies):
            wiring = PolicyWiring(p, self.env_info, self.traj, self.free_slots, self.weights[p])
            worker = InferenceWorker(cfg, wiring, 0, self.router)
            worker.model = self.policies[p]  # no on_start: the echo policy replaces the actor-critic
            self.inference.append(worker)
            self.loop.add_component(worker)

        make_batcher = batcher_factory or (lambda hot, p: RecordingBatcher(p, hot.router, hot.traj, hot.free_slots))
        make_learner = learner_factory or (lambda hot, p: Recorder(learner_name(p), hot.router))
        self.batchers = [make_batcher(self, p) for p in range(cfg.num_policies)]
        self.learners = [make_learner(self, p) for p in range(cfg.num_policies)]
        for component in [*self.batchers, *self.learners]:
            self.loop.add_component(component)

        self.workers = [
            RolloutWorker(cfg, self.env_info, w, self.router, self.buffers, self.free_slots, sampler_states)
            for w in range(cfg.num_workers)
        ]
        for worker in self.workers:
            self.free_slots.watch(worker)
            self.loop.add_component(worker)

    def _make_env(self, name: str, cfg=None, env_config=None, render_mode=None) -> TraceEnv:
        env_id = -1 if env_config is None else int(env_config.env_id)
        env = self._env_cls(env_id)
        if env_id >= 0:
            assert env_id not in self.envs, f"env_id {env_id} created twice"
            self.envs[env_id] = env
        return env

    def start(self) -> HotPath:
        self.loop.running = True
        for component in [*self.batchers, *self.learners]:  # inference workers are not started: no model to build
            component.on_start()
        for worker in self.workers:
            worker.on_start()
        errors = self.runner.received("on_component_error")
        assert not errors, errors[0][1]
        for worker in self.workers:
            worker.on_begin_sampling()
        return self

    def pump(self, until, max_iterations: int = 5000) -> None:
        """Run loop iterations until ``until()`` holds; fail if the hot path stalls or reports an error."""
        for _ in range(max_iterations):
            if until():
                return
            self.loop.run_once()
            errors = self.runner.received("on_component_error")
            assert not errors, f"{errors[0][0]} failed:\n{errors[0][1]}"
        raise AssertionError(f"the hot path stalled: condition not met after {max_iterations} loop iterations")

    def trajectories(self) -> list[tuple[int, dict]]:
        """(policy, trajectory) of every slot the recording batchers received, in arrival order."""
        return [(b.policy_id, traj) for b in self.batchers for traj in b.trajectories]

    def num_trajectories(self) -> int:
        return sum(len(b.trajectories) for b in self.batchers)


# ---------------------------------------------------------------- the checks
def step_problems(traj: dict, t: int, policy_id: int) -> list[str]:
    """Every way step ``t`` of a recorded trajectory disagrees with what its observation says happened."""
    obs, nxt = traj["obs"][t], traj["obs"][t + 1]
    e, a, episode, tau, k = (int(v) for v in obs.tolist())
    where = f"t={t} obs={obs.tolist()}"
    if e < 0:
        return [f"{where}: not an observation (scribbled or never written)"]
    problems = []
    ended = tau + 1 == episode_length(e)
    expected_next = [e, a, episode + 1, 0, k + 1] if ended else [e, a, episode, tau + 1, k + 1]

    def expect(name: str, got, want) -> None:
        if got != want:
            problems.append(f"{where}: {name} is {got}, expected {want}")

    expect("next observation", [int(v) for v in nxt.tolist()], expected_next)
    expect("reward", float(traj["rewards"][t]), step_reward(e, a, k))
    expect("done", float(traj["dones"][t]), float(ended))
    expect("time_out", float(traj["time_outs"][t]), float(ended and truncates(e)))
    expect("valid", bool(traj["valids"][t]), is_active(a, k))
    expect("action", int(traj["actions"][t]), policy_action(e, a, k, policy_id))
    expect("value", float(traj["values"][t]), 1000.0 * e + 100.0 * a + k)
    expect("log_prob (tau)", float(traj["log_prob_actions"][t]), float(tau))
    logits = [float(v) for v in traj["action_logits"][t].tolist()]
    expect("policy id in logits", logits[1], float(policy_id))
    expect("k in logits", logits[2], float(k))
    expect("policy_version", int(traj["policy_version"][t]), int(logits[0]))
    expect("rnn_state", [float(v) for v in traj["rnn_states"][t].tolist()], [tau, k - 1.0] if tau else [0.0, 0.0])
    return problems


def trajectory_problems(traj: dict, policy_id: int) -> list[str]:
    T = traj["rewards"].shape[0]
    problems = [p for t in range(T) for p in step_problems(traj, t, policy_id)]
    last = traj["obs"][T]
    tau_last, k_last = float(last[TAU]), float(last[K])
    expected_rnn = [tau_last, k_last - 1] if tau_last else [0.0, 0.0]
    if traj["rnn_states"][T].tolist() != expected_rnn:
        problems.append(f"rnn_state after the last step is {traj['rnn_states'][T].tolist()}, expected {expected_rnn}")
    return problems


def continuity_problems(trajectories: list[tuple[int, dict]]) -> list[str]:
    """Each actor's trajectories, in order, must tile its env steps: step 0 of the next one is step T of the last."""
    by_actor: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for _, traj in trajectories:
        by_actor[(int(traj["obs"][0, E]), int(traj["obs"][0, A]))].append(traj)
    problems = []
    for actor, trajs in sorted(by_actor.items()):
        trajs.sort(key=lambda tr: float(tr["obs"][0, K]))
        T = trajs[0]["rewards"].shape[0]
        starts = [int(tr["obs"][0, K]) for tr in trajs]
        if starts != list(range(0, T * len(trajs), T)):
            problems.append(f"actor {actor}: trajectories start at env steps {starts}")
        for prev, nxt in zip(trajs[:-1], trajs[1:], strict=True):
            if not torch.equal(prev["obs"][T], nxt["obs"][0]):
                problems.append(f"actor {actor}: obs {nxt['obs'][0].tolist()} != carried {prev['obs'][T].tolist()}")
            if not torch.equal(prev["rnn_states"][T], nxt["rnn_states"][0]):
                problems.append(
                    f"actor {actor}: rnn {nxt['rnn_states'][0].tolist()} != carried {prev['rnn_states'][T].tolist()}"
                )
    return problems


def all_problems(trajectories: list[tuple[int, dict]]) -> list[str]:
    problems = [p for policy, traj in trajectories for p in trajectory_problems(traj, policy)]
    return problems + continuity_problems(trajectories)


def policies_of_steps(trajectories: list[tuple[int, dict]]) -> dict[tuple[int, int, int], int]:
    """(env, agent, k) -> the policy that acted at that step, from the recorded trajectories."""
    return {
        (int(tr["obs"][t, E]), int(tr["obs"][t, A]), int(tr["obs"][t, K])): policy
        for policy, tr in trajectories
        for t in range(tr["rewards"].shape[0])
    }


def env_action_problems(hot: HotPath, trajectories: list[tuple[int, dict]]) -> list[str]:
    """Each env applied, at each recorded step ``k``, the action the policy chose from that step's observation."""
    policy_of_step = policies_of_steps(trajectories).get
    problems = []
    for env_id, env in sorted(hot.envs.items()):
        agents = env.received_by_agent if isinstance(env, TraceMultiAgentEnv) else [env.received]
        for agent, received in enumerate(agents):
            for k, action in enumerate(received):
                policy = policy_of_step((env_id, agent, k))
                if policy is not None and action != policy_action(env_id, agent, k, policy):
                    problems.append(f"env {env_id} agent {agent} step {k}: applied {action}")
    return problems


# ---------------------------------------------------------------- mutations (a deliberately wrong index)
def mutated(function, old: str, new: str):
    """``function`` recompiled with the source text ``old`` replaced by ``new`` (a mutation test's bug).

    Fails loudly when ``old`` is no longer in the source, so a refactoring cannot silently disarm a mutation test.
    """
    target = inspect.unwrap(function)
    source = textwrap.dedent(inspect.getsource(target))
    assert source.count(old) == 1, f"mutation anchor {old!r} not found exactly once in {target.__qualname__}"
    namespace: dict[str, Any] = {}
    module_globals = target.__globals__
    flags = annotations.compiler_flag  # annotations stay strings, as in the library's modules
    code = compile(source.replace(old, new), inspect.getsourcefile(target), "exec", flags=flags, dont_inherit=True)
    exec(code, module_globals, namespace)
    return namespace[target.__name__]
