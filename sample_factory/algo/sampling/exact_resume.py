"""Exact resume, the rollout worker's side: its sampling state as plain data, and sampling on from it.

Serial synchronous mode only (see ``sample_factory.algo.utils.sampler_state`` for the whole scheme and the
exchange through which the learner's checkpoint carries this state). A worker's state can be captured only when it
is at rest: every split has finished its rollout, staged the last observation and RNN state in its carry-over
buffers, and waits for slots. Then nothing of the current rollouts lives in the trajectory slots, and the state is
the envs (``sample_factory.envs.env_state``), the carry-over, the agent-to-policy mapping, the running episode
counters and the worker's random generator.

This is kept apart from ``rollout_worker`` because it runs twice per run at most, while the worker's module is the
sampling hot path: the worker only registers a capture function and, at the start, asks whether to continue from
a saved state.
"""

from __future__ import annotations

import random
from typing import Protocol

import torch

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.envs.env_state import capture_env_state, restore_env_state
from sample_factory.utils.logging_setup import log


class ResumableWorker(Protocol):
    """The parts of a rollout worker (``rollout_worker.RolloutWorker``) that make up its sampling state."""

    name: str
    worker_idx: int
    runners: list[NonBatchedEnvRunner | BatchedEnvRunner]  # one per split
    waiting_for_slots: list[int]  # splits at rest: rollout finished, waiting for fresh slots
    carry: list[list[dict]]  # per split, per space group: the last observation and RNN state of its finished rollout
    rng: random.Random
    stats: EpisodeStats


class WorkerResume:
    """One rollout worker's part in exact resume: gives its state to the exchange and takes a saved one back."""

    def __init__(self, worker: ResumableWorker, exchange: SamplerStateExchange) -> None:
        self.worker = worker
        self.exchange = exchange
        self._unsupported_logged = False

    def register(self) -> None:
        """Let the exchange ask for this worker's state when the learner saves (call once the envs exist)."""
        self.exchange.register(self.worker.worker_idx, self.capture)

    def capture(self) -> dict | None:
        """Everything needed to continue sampling exactly from here, or None when not at rest or not savable."""
        worker = self.worker
        if not worker.runners or len(worker.waiting_for_slots) != len(worker.runners):
            return None
        splits = []
        for split, runner in enumerate(worker.runners):
            env_states = []
            for env in split_envs(runner):
                env_state, reason = capture_env_state(env)
                if env_state is None:
                    if not self._unsupported_logged:
                        log.info("%s: no exact resume, the env state is not saved: %s", worker.name, reason)
                        self._unsupported_logged = True
                    return None
                env_states.append(env_state)
            carry = worker.carry[split][0]
            splits.append(
                {
                    "envs": env_states,
                    "obs": {key: value.clone() for key, value in carry["obs"].items()},
                    "rnn_states": carry["rnn_states"].clone(),
                    "policy": torch.from_numpy(runner.state.policy.copy()),
                    "next_policy": torch.from_numpy(runner.state.next_policy.copy()),
                }
            )
        version, internal, gauss = worker.rng.getstate()
        return {
            "splits": splits,
            "episode_reward": torch.from_numpy(worker.stats.reward.copy()),
            "episode_length": torch.from_numpy(worker.stats.length.copy()),
            "rng": (version, list(internal), gauss),
        }

    def restore(self) -> bool:
        """Put back the state saved for this worker, if there is one that fits; True if it was restored.

        The worker is then where it was when the state was captured: at rest, every split about to begin its next
        rollout from the carry-over. A state that does not fit (other splits, envs, actors or observation keys) is
        skipped with a warning, and the episodes start afresh.
        """
        worker = self.worker
        state = self.exchange.take_worker_state(worker.worker_idx)
        if state is None:
            return False
        try:
            check_state_layout(worker, state)
            for runner, split_state in zip(worker.runners, state["splits"], strict=True):
                for env, env_state in zip(split_envs(runner), split_state["envs"], strict=True):
                    restore_env_state(env, env_state)
        except (ValueError, KeyError) as error:
            log.warning(
                "%s: the saved sampler state does not fit this run (%s); episodes start afresh", worker.name, error
            )
            return False
        for split, split_state in enumerate(state["splits"]):
            st, carry = worker.runners[split].state, worker.carry[split][0]
            for key, value in split_state["obs"].items():
                carry["obs"][key].copy_(value)
            carry["rnn_states"].copy_(split_state["rnn_states"])
            st.policy[:] = split_state["policy"].numpy()
            st.next_policy[:] = split_state["next_policy"].numpy()
        worker.stats.reward[:] = state["episode_reward"].numpy()
        worker.stats.length[:] = state["episode_length"].numpy()
        version, internal, gauss = state["rng"]
        worker.rng.setstate((version, tuple(internal), gauss))
        return True


def split_envs(runner) -> list:
    """The env instances a split steps, one per env (a batched runner's envs are those of its batched env)."""
    return list(runner.envs) if isinstance(runner, NonBatchedEnvRunner) else runner.env.envs


# The carry-over of a split has one entry per space group (``actor_buffers``). Exact resume needs a single policy
# (``exact_resume_supported``), and agents with different spaces need several, so there is always one entry here.


def check_state_layout(worker: ResumableWorker, state: dict) -> None:
    """ValueError unless the saved state has this worker's splits, envs, actors and observation keys."""
    if len(state["splits"]) != len(worker.runners):
        raise ValueError(f"{len(state['splits'])} splits saved, {len(worker.runners)} now")
    for split, split_state in enumerate(state["splits"]):
        carry, num_envs = worker.carry[split][0], len(split_envs(worker.runners[split]))
        if len(split_state["envs"]) != num_envs:
            raise ValueError(f"{len(split_state['envs'])} envs saved in split {split}, {num_envs} now")
        if split_state["rnn_states"].shape != carry["rnn_states"].shape:
            raise ValueError(
                f"RNN states {tuple(split_state['rnn_states'].shape)} saved, {tuple(carry['rnn_states'].shape)} now"
            )
        if set(split_state["obs"]) != set(carry["obs"]):
            raise ValueError(f"observation keys {sorted(split_state['obs'])} saved, {sorted(carry['obs'])} now")
        for key, value in split_state["obs"].items():
            if value.shape != carry["obs"][key].shape:
                raise ValueError(
                    f"observation {key!r} of shape {tuple(value.shape)} saved, {tuple(carry['obs'][key].shape)} now"
                )
    if state["episode_reward"].shape != worker.stats.reward.shape:
        raise ValueError("a different number of actors was saved")
