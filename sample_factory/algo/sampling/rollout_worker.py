"""Rollout worker: owns ``--num_envs_per_worker`` envs split into ``--worker_num_splits`` groups.

Double-buffered sampling: each split waits for its actions independently, so while the inference worker computes
actions for one split the other one steps its envs. Per step, a split sends one small request per policy (``worker,
split, t, slots``) and receives one reply (``on_actions_ready``); the splits stepped on one reply send their
requests together, in one message per inference worker. After ``--rollout`` steps the full trajectory slots go to
each policy's batcher and fresh slots are taken from this worker's own free list; when none are free (the learner is
behind) the split waits, which pauses collection.

The worker owns a fixed set of slots (``shared_buffers.SlotOwners``) and is the only one that hands them out, so
taking a slot touches no shared queue. Whoever is done with slots sends them back with ``on_slots_freed``, and that
message resumes the waiting splits at once: no polling, no sleep, no timeout.
"""

from __future__ import annotations

import collections
import random
import sys
import time
import traceback

import numpy as np

from sample_factory.algo.runners import sf2_constructors as sf2
from sample_factory.algo.sampling.actor_buffers import ActorBuffers
from sample_factory.algo.sampling.decorrelation import decorrelation_steps
from sample_factory.algo.sampling.env_runner import (
    BatchedEnvRunner,
    EnvRecovery,
    EpisodeStats,
    NonBatchedEnvRunner,
    SplitStats,
    env_seed,
    split_env_config,
)
from sample_factory.algo.sampling.exact_resume import WorkerResume
from sample_factory.algo.sampling.mixed_spaces_runner import MixedSpacesEnvRunner
from sample_factory.algo.sampling.peer_restarts import PeerOutages
from sample_factory.algo.sampling.reward_shaping import apply_reward_shaping
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.shared_buffers import SlotOwners, TrajectoryBuffers, numpy_views
from sample_factory.algo.utils.wiring import RUNNER, batcher_name, inference_worker_name, rollout_worker_name
from sample_factory.envs.contract_errors import ContractError
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_contract import RolloutFiniteCheck
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.make_env import make_env_func_batched
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

STATS_REPORT_PERIOD = 1.0


class RolloutWorkerComponent(Component):
    """A rollout worker (module docstring); ``loop_specs.build_rollout_worker`` builds it."""

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        worker_idx: int,
        router: Router,
        buffers: TrajectoryBuffers | None,
        slot_owners: SlotOwners | None,
        sampler_states: SamplerStateExchange | None = None,
        restart: RestartInfo | None = None,
    ) -> None:
        super().__init__(rollout_worker_name(worker_idx), router)
        self.cfg = cfg
        self.env_info = env_info
        self.worker_idx = worker_idx
        self.buffers = buffers  # trajectory slots, one set per space group
        self.spaces = PolicySpaces(cfg, env_info)  # which policies each agent may draw
        # a restarted worker: its slots that batchers still hold come back later by on_slots_freed
        withheld = restart.withheld_slots if restart is not None else {}
        held = {slot for slots in withheld.values() for slot in slots}
        # this worker's free trajectory slots, oldest first; only this worker takes from it
        self.free_slots: collections.deque[int] = collections.deque(
            s for s in (slot_owners.initial_free(worker_idx) if slot_owners is not None else ()) if s not in held
        )
        self.restarted = restart is not None
        self.pending_reset: dict[int, list] = {}  # a restarted worker's splits short of slots: split -> env seeds
        self.sampling_begun = False
        # peers being restarted (see docs/reliability.md): slots handed to a batcher (slot -> policy) and not yet
        # back, reclaimed if that policy's learner dies
        self.handed_out: dict[int, int] = {slot: p for p, slots in withheld.items() for slot in slots}
        self.rollout = cfg.rollout
        self.runners: list[NonBatchedEnvRunner | BatchedEnvRunner] = []
        self.waiting_for_slots: list[int] = []  # splits that finished a rollout and wait for fresh slots, in order
        self.num_policies = cfg.num_policies
        self.rng = random.Random((cfg.seed or 0) * 1000 + worker_idx if cfg.seed is not None else None)
        self.stats = EpisodeStats(0)
        self.stopped = False
        self._inference_targets = [
            inference_worker_name(p, worker_idx % cfg.policy_workers_per_policy) for p in range(cfg.num_policies)
        ]
        self.peers = PeerOutages(self._inference_targets)  # policies whose learner or inference worker is down
        self._last_report = time.monotonic()
        # PBT: each policy's reward-shaping scheme (None: the env's own), applied to the agents that policy controls
        self.reward_shaping: list[dict | None] = [None] * cfg.num_policies
        self.shaping_active = False
        # per split: the last observation and RNN state of its finished rollout, step 0 of the next one
        self.carry: list[list[dict]] = []
        self.parts: list[list] = []  # per split: its actors by space group (``actor_buffers``)
        self.exact_resume = WorkerResume(self, sampler_states) if sampler_states is not None else None
        # while a reply is handled: the requests of the splits it stepped, per inference worker (else None)
        self._outbox: dict[str, list] | None = None

    # ---------------------------------------------------------------- start-up
    def on_start(self) -> None:
        self.send(RUNNER, "on_envs_starting", self.name)  # the runner times env creation and first reset
        try:
            self._create_envs()
        except Exception:
            self._report_error()
            return
        self.loop.add_timer(STATS_REPORT_PERIOD, self._report_stats)
        if self.exact_resume is not None:
            self.exact_resume.register()
        self.send(RUNNER, "on_component_ready", self.name)

    def _create_envs(self) -> None:
        cfg = self.cfg
        per_split = cfg.num_envs_per_worker // cfg.worker_num_splits
        num_agents = self.env_info.num_agents
        self.stats = EpisodeStats(cfg.num_envs_per_worker * num_agents, cfg.use_record_episode_statistics)
        trajs_np = [numpy_views(traj) for traj in self.buffers.by_group]
        decorrelation = self._decorrelation_steps()
        self.actor_buffers = ActorBuffers(self.buffers, num_agents)
        self.finite_checks = [RolloutFiniteCheck(str(cfg.env), traj_np, num_agents) for traj_np in trajs_np]
        for split in range(cfg.worker_num_splits):
            runner = self._make_split_runner(split, per_split, trajs_np)
            actor_offset = split * per_split * num_agents
            runner.stats = SplitStats(self.stats, actor_offset, runner.state.num_actors)
            self.runners.append(runner)
            self.parts.append(self.actor_buffers.split_parts(runner.state.num_actors))
            self.carry.append(self.actor_buffers.allocate_carry(self.parts[split], runner.state.num_actors))
            self._assign_policies(runner.state, range(runner.state.num_actors))
            runner.state.policy[:] = runner.state.next_policy
            seeds = [self._env_seed(split, i) for i in range(per_split)]
            if self._slots_missing(runner):
                if not self.restarted:
                    raise RuntimeError(
                        f"{self.name}: not enough free trajectory slots at start-up (a bug in slot sizing)"
                    )
                # the batchers still hold some of the dead predecessor's slots (they come back by on_slots_freed,
                # after this worker is ready): the split resets, and samples, once it has a slot for every actor
                self.pending_reset[split] = seeds
                continue
            steps = decorrelation[split * per_split : (split + 1) * per_split]
            if any(steps):
                runner.reset(seeds, steps)
            else:
                runner.reset(seeds)
        self.splits_started = [False] * cfg.worker_num_splits
        # per split, a bit per policy whose actions it waits for (several policies may control a split's actors)
        self._awaiting = [0] * cfg.worker_num_splits

    def _decorrelation_steps(self) -> list[int]:
        """Per env of this worker (over all splits), the random steps it takes before sampling: none for a worker
        restarted after a crash, whose envs already start out of step with the other workers' envs."""
        steps = [0 if self.restarted else decorrelation_steps(self.cfg, k) for k in range(self.cfg.num_envs_per_worker)]
        if any(steps):
            log.info("%s: decorrelating experience: its envs take %s random steps before sampling", self.name, steps)
        return steps

    def _make_split_runner(self, split: int, per_split: int, trajs_np: list[dict]):
        cfg = self.cfg
        first = split * per_split
        if cfg.batched_sampling:
            runner = self._make_batched_runner(self._env_config(first), per_split)
            make = lambda _: self._make_batched_runner(self._env_config(first), per_split).env  # noqa: E731
            num_envs = 1
        else:
            make = lambda i: create_env(cfg.env, cfg=cfg, env_config=self._env_config(first + i))  # noqa: E731
            envs = [make(i) for i in range(per_split)]
            if self.spaces.heterogeneous:
                runner = MixedSpacesEnvRunner(cfg, self.env_info, envs, trajs_np, self.spaces.agent_group)
            else:
                runner = NonBatchedEnvRunner(cfg, self.env_info, envs, trajs_np[0], EpisodeStats(0))
            num_envs = per_split
        if cfg.env_error_behavior == "recreate":
            runner.recovery = EnvRecovery(make, num_envs)
        return runner

    def _env_config(self, vector_index: int) -> AttrDict:
        return split_env_config(self.cfg, self.worker_idx, vector_index)

    def _make_batched_runner(self, env_config: AttrDict, per_split: int) -> BatchedEnvRunner:
        """The split's envs as one batched env; its actors must fill exactly the split's share of the buffers."""
        env = make_env_func_batched(self.cfg, env_config, num_envs=per_split)
        expected = per_split * self.env_info.num_agents
        if env.num_agents != expected:
            env.close()
            raise ValueError(
                f"the batched env of a split has {env.num_agents} actors but {per_split} env(s) x "
                f"num_agents={self.env_info.num_agents} = {expected} were expected: every env instance must have "
                "as many agents as the one the runner inspected at start-up"
            )
        return BatchedEnvRunner(self.cfg, self.env_info, env, self.buffers.by_group[0], EpisodeStats(0))

    def _env_seed(self, split: int, i: int) -> int | None:
        return env_seed(self.cfg, self.worker_idx, split, i)

    def _slots_missing(self, runner) -> bool:
        """Take a free slot for every actor of the split that has none; False when all were available."""
        st = runner.state
        missing = np.flatnonzero(st.slots < 0)
        if len(missing) == 0:
            return False
        free = self.free_slots
        got = [free.popleft() for _ in range(min(len(missing), len(free)))]
        st.slots[missing[: len(got)]] = got
        return len(got) < len(missing)

    def _assign_policies(self, st, actors) -> None:
        """Agent -> policy mapping, drawn per episode; takes effect at the next rollout start.

        With ``--pbt_mix_policies_in_one_env=False`` the agents of one env always share a policy: only the end of
        agent 0's episode draws, for all of them, so agents that finish at other times cannot drift apart.
        Each agent draws among the policies of its spaces (``PolicySpaces.agent_candidates``: every policy when all
        agents are alike; the one ``--agent_to_policy`` names). Without mixing, the draw of agent 0 is an index into
        each agent's candidates, so agents of one kind still share one policy.
        """
        if self.num_policies == 1:
            return
        num_agents = self.env_info.num_agents
        candidates = self.spaces.agent_candidates
        for actor in actors:
            if self.cfg.pbt_mix_policies_in_one_env:
                st.next_policy[actor] = self.rng.choice(candidates[actor % num_agents])
            elif actor % num_agents == 0:
                # one draw per env: agent 0's decides for every agent of its env, whenever they finish
                k = self.rng.randrange(len(candidates[0]))
                for agent in range(num_agents):
                    st.next_policy[actor + agent] = candidates[agent][k % len(candidates[agent])]

    # ---------------------------------------------------------------- main flow
    def on_begin_sampling(self) -> None:
        """Sent by the runner once every component is ready; starts (possibly delayed) sampling."""
        if self.exact_resume is not None and self.exact_resume.restore():
            for split in range(len(self.runners)):  # at rest, as when the state was saved: begin the next rollouts
                self.splits_started[split] = True
                self._begin_next_rollout(split)
            return
        self.sampling_begun = True
        delay_max = 0.0 if self.restarted else self.cfg.decorrelate_experience_max_seconds
        for split in range(len(self.runners)):
            if delay_max > 0:
                delay = self.rng.uniform(0, delay_max)
                if not self.cfg.decorrelate_envs_on_one_worker:
                    delay = self.worker_idx * delay_max / max(1, self.cfg.num_workers)
                self.loop.call_later(delay, lambda s=split: self._start_split(s))
            else:
                self._start_split(split)

    def _start_split(self, split: int) -> None:
        if self.splits_started[split] or self.stopped or split in self.pending_reset:
            return
        self.splits_started[split] = True
        self._zero_rnn_states(self.runners[split].state.slots, 0)
        self._request_actions(split)

    def on_actions_ready(self, splits: list[int], policy_id: int = 0) -> None:
        """Step the splits whose actions are all written; their next requests leave together, once all have stepped.

        A reply often covers every split of this worker (the inference worker served them in one pass), so one
        message per inference worker instead of one per split halves the requests and their wake-ups.
        """
        bit = 1 << policy_id
        self._outbox = {}
        try:
            for split in splits:
                # with several policies a split waits for one reply per policy that controls some of its actors
                awaiting = self._awaiting[split]
                if not awaiting & bit:
                    continue  # not waited for: a reply to a request re-issued after its inference worker restarted
                self._awaiting[split] = awaiting = awaiting & ~bit
                if awaiting:
                    continue
                try:
                    self._advance_split(split)
                except Exception:
                    self._report_error()
                    return
        finally:
            outbox, self._outbox = self._outbox, None
            self._send_requests(outbox)

    def _advance_split(self, split: int) -> None:
        if self.stopped:
            return
        runner = self.runners[split]
        with self.timing.add_time("env_step"):
            runner.step()
        if runner.recovery is not None and runner.recovery.errors:
            self._report_recreated(runner.recovery)
        st = runner.state
        dones = runner.last_dones
        if dones.any():
            done_actors = np.flatnonzero(dones)
            self._zero_rnn_states(st.slots[done_actors], st.t)
            if self.num_policies > 1:
                self._assign_policies(st, done_actors)
        if st.t == self.rollout:
            with self.timing.add_time("complete_rollouts"):
                self._complete_rollout(split, runner)
            return
        self._request_actions(split)

    def _request_actions(self, split: int) -> None:
        st = self.runners[split].state
        if self.num_policies == 1:
            self._awaiting[split] = 1
            if not self.peers.inference_down:  # else sent once the inference worker is back
                self._request(self._inference_targets[0], split, st.t, st.slots.tolist())
            return
        awaiting = 0
        for policy in np.unique(st.policy).tolist():
            awaiting |= 1 << policy
            if policy not in self.peers.inference_down:
                self._send_request(split, policy)
        self._awaiting[split] = awaiting

    def _send_request(self, split: int, policy: int) -> None:
        st = self.runners[split].state
        slots = st.slots[st.policy == policy] if self.num_policies > 1 else st.slots
        self._request(self._inference_targets[policy], split, st.t, slots.tolist())

    def _request(self, target: str, split: int, t: int, slots: list[int]) -> None:
        """Ask ``target`` for the actions of ``slots`` at step ``t``: at once, or with the other splits' requests
        when called while a reply is handled (``on_actions_ready`` sends them when every split has stepped)."""
        if self._outbox is None:
            self.send(target, "on_policy_request", self.worker_idx, split, t, slots)
        else:
            self._outbox.setdefault(target, []).append((split, t, slots))

    def _send_requests(self, outbox: dict[str, list]) -> None:
        for target, requests in outbox.items():
            if len(requests) == 1:
                self.send(target, "on_policy_request", self.worker_idx, *requests[0])
            else:
                self.send(target, "on_policy_requests", self.worker_idx, requests)

    def _complete_rollout(self, split: int, runner) -> None:
        st = runner.state
        old_slots = st.slots.copy()
        for group, actors in self.parts[split]:
            self.finite_checks[group].check(old_slots[actors], self.rollout, f"{self.name} split {split}", actors)
        self.actor_buffers.stage_carry_over(self.parts[split], self.carry[split], old_slots, self.rollout)
        for policy in range(self.num_policies):
            mask = st.policy == policy
            if mask.any():
                slots = old_slots[mask].tolist()
                if policy in self.peers.learners_down:  # its learner is being restarted: the experience is dropped
                    self.free_slots.extend(slots)
                    continue
                self.handed_out.update(dict.fromkeys(slots, policy))
                self.send(batcher_name(policy), "on_new_trajectories", slots, int(st.frames[mask].sum()))
        st.frames[:] = 0
        self._switch_policies(runner)
        st.slots[:] = -1
        st.t = 0
        if self._slots_missing(runner):
            self.waiting_for_slots.append(split)
            return
        self._begin_next_rollout(split)

    def _begin_next_rollout(self, split: int) -> None:
        """Step 0 of the new slots continues where the finished rollout stopped."""
        self.actor_buffers.begin_rollout(self.parts[split], self.carry[split], self.runners[split].state.slots)
        self._request_actions(split)

    def _zero_rnn_states(self, slots: np.ndarray, t: int) -> None:
        self.actor_buffers.zero_rnn_states(slots, t)

    def on_slots_freed(self, slots: list[int]) -> None:
        """Some of this worker's slots are free again (sent by whoever consumed them): resume the waiting splits.

        This message is the only wake-up a waiting split needs, so it continues within the same loop iteration.
        """
        handed_out = self.handed_out
        for slot in slots:
            handed_out.pop(slot, None)
        self.free_slots.extend(slots)
        if self.pending_reset and not self.stopped:
            self._reset_pending_splits()
        if not self.waiting_for_slots or self.stopped:
            return
        still_waiting = []
        for split in self.waiting_for_slots:
            if self._slots_missing(self.runners[split]):
                still_waiting.append(split)
            else:
                self._begin_next_rollout(split)
        self.waiting_for_slots = still_waiting

    def _reset_pending_splits(self) -> None:
        """A restarted worker's splits that started short of slots: reset (and sample) those that now have them."""
        for split, seeds in list(self.pending_reset.items()):
            if self._slots_missing(self.runners[split]):
                continue  # keeps the slots it took; the next freed ones complete it
            del self.pending_reset[split]
            self.runners[split].reset(seeds)
            if self.sampling_begun:
                self._start_split(split)

    # ---------------------------------------------------------------- population-based training
    def on_pbt_reward_shaping(self, policy_id: int, scheme: dict) -> None:
        """PBT's reward-shaping scheme for ``policy_id``: applied now to its agents, later to agents it takes over."""
        self.reward_shaping[policy_id] = scheme
        self.shaping_active = True
        for runner in self.runners:
            actors = np.flatnonzero(runner.state.policy == policy_id)
            if len(actors):
                apply_reward_shaping(runner, actors, self.reward_shaping, self.env_info.num_agents)

    def _switch_policies(self, runner) -> None:
        """Rollout boundary: the policies drawn for the next rollout take over (with their reward shaping)."""
        st = runner.state
        changed = np.flatnonzero(st.policy != st.next_policy) if self.shaping_active else ()
        st.policy[:] = st.next_policy
        if len(changed):
            apply_reward_shaping(runner, changed, self.reward_shaping, self.env_info.num_agents)

    # ---------------------------------------------------------------- peers being restarted (see peer_restarts)
    def on_inference_worker_lost(self, name: str, token: int) -> None:
        """``name`` died: hold back requests to it until it is back (its inbox is emptied before it restarts)."""
        self.peers.inference_lost(name)
        self.send(RUNNER, "on_restart_ack", token, self.name, None)

    def on_inference_worker_restarted(self, name: str) -> None:
        """Send ``name`` again every request it owes an answer to: they were lost with it or held back."""
        policies = self.peers.inference_back(name)
        if self.stopped or not self.runners:
            return
        for split, awaiting in enumerate(self._awaiting):
            for policy in policies:
                if awaiting & (1 << policy):
                    self._send_request(split, policy)

    def on_learner_lost(self, policy_id: int, token: int) -> None:
        """The learner (and batcher) of ``policy_id`` died: its slots come back here now, and until it is back the
        trajectories of its agents are dropped instead of sent."""
        self.peers.learner_lost(policy_id)
        reclaimed = [slot for slot, p in self.handed_out.items() if p == policy_id]
        self.send(RUNNER, "on_restart_ack", token, self.name, None)
        if reclaimed:
            self.on_slots_freed(reclaimed)

    def on_learner_restarted(self, policy_id: int) -> None:
        self.peers.learner_back(policy_id)

    # ---------------------------------------------------------------- reporting and shutdown
    def _report_stats(self) -> None:
        finished = self.stats.finished
        if finished:
            self.send(RUNNER, "on_episodes_finished", finished)
            self.stats.finished = []
        self.send(RUNNER, "on_heartbeat", self.name)

    def _report_recreated(self, recovery: EnvRecovery) -> None:
        errors, recovery.errors = recovery.errors, []
        self.send(RUNNER, "on_envs_recreated", self.name, len(errors), errors[-1])

    def _report_error(self) -> None:
        exc = sys.exc_info()[1]
        # a broken env contract is explained by its message; a traceback into the env runner would only distract
        tb = str(exc) if isinstance(exc, ContractError) else traceback.format_exc()
        log.error("%s failed:\n%s", self.name, tb)
        self.stopped = True
        self.send(RUNNER, "on_component_error", self.name, tb)

    def on_stop_requested(self) -> None:
        self.stopped = True
        self._report_stats()
        self.send(RUNNER, "on_component_stopped", self.name, self.timing.tree_str())
        self.loop.component_stopped(self.name)

    def on_stop(self) -> None:
        for runner in self.runners:
            try:
                runner.close()
            except Exception:  # an env that fails to close must not keep the others open
                log.warning("%s: an env failed to close:\n%s", self.name, traceback.format_exc())


class RolloutWorker(RolloutWorkerComponent):
    """Sample Factory 2's constructor (``runners.sf2_constructors``); this package's form builds the component."""

    def __init__(
        self,
        event_loop: object,
        worker_idx: object = sf2.UNSET,
        buffer_mgr: object = sf2.UNSET,
        inference_queues: object = sf2.UNSET,
        cfg: object = sf2.UNSET,
        env_info: object = sf2.UNSET,
        *args: object,
        **kwargs: object,
    ) -> None:
        sf2.require_package_form(self, event_loop, sf2.SAMPLING_INSTEAD)
        args = sf2.passed(event_loop, worker_idx, buffer_mgr, inference_queues, cfg, env_info, *args)
        super().__init__(*args, **kwargs)


init_rollout_worker_process = sf2.init_rollout_worker_process  # Sample Factory 2's name at its path
