"""The pieces of a restart that need no processes: peers' answers, slot bookkeeping, fresh inboxes, weights repair,
env recreation. The end-to-end restarts are in ``test_respawn.py``."""

from __future__ import annotations

import pickle
import queue
import signal
import threading

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.learning.batch_buffers import LearnerLink, TrainingBatches, batch_placement
from sample_factory.algo.learning.batcher import Batcher
from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.runners.respawn import describe_exit
from sample_factory.algo.sampling.env_runner import EnvKeepsFailing, EnvRecovery, EpisodeStats, NonBatchedEnvRunner
from sample_factory.algo.utils.policy_weights import PolicyWeights
from sample_factory.algo.utils.shared_buffers import SlotOwners, allocate_trajectories, numpy_views
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, LoopLiveness, Router


def _sync_batcher():
    """A batcher of 2-trajectory batches, one buffer, sync mode; even slots are worker 0's, odd ones worker 1's."""
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, 1
    cfg.async_rl = False
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=6, share=False)
    loops = {"batcher_p0": "main", "learner_p0": "main", "rollout_w0": "w", "rollout_w1": "w", RUNNER: "r"}
    router = Router(loops, {"main": LocalInbox(), "w": LocalInbox(), "r": LocalInbox()})
    loop = EventLoop("main", router.inboxes["main"], router)
    wiring = PolicyWiring(0, info, traj, SlotOwners(6, 2, 1), None)
    batcher = Batcher(cfg, LearnerLink(wiring, TrainingBatches(cfg, info, batch_placement("cpu"))), router)
    loop.add_component(batcher)
    return batcher, router.inboxes


def _taken(inbox: LocalInbox) -> list:
    try:
        return inbox.get_many(block=False)
    except queue.Empty:
        return []


def _freed(inboxes: dict) -> dict[str, list[int]]:
    freed: dict[str, list[int]] = {}
    for component, slot, (slots,) in _taken(inboxes["w"]):
        assert slot == "on_slots_freed"
        freed.setdefault(component, []).extend(slots)
    return freed


def test_exit_descriptions_name_the_signal_and_the_oom_killer():
    assert "SIGKILL" in describe_exit(-signal.SIGKILL) and "out-of-memory" in describe_exit(-signal.SIGKILL)
    assert describe_exit(-signal.SIGSEGV).startswith("killed by SIGSEGV")
    assert describe_exit(3) == "exited with code 3"


def test_batcher_reports_the_dead_workers_slots_and_parks_later_frees():
    batcher, inboxes = _sync_batcher()
    batcher.on_new_trajectories([0, 1], frames=8)  # a batch: held until trained (sync mode)
    batcher.on_new_trajectories([3, 4], frames=8)  # pending: the single batch buffer is busy
    _taken(inboxes["w"])
    batcher.on_rollout_worker_lost(1, 7)
    ((component, slot, (token, name, held)),) = _taken(inboxes["r"])[-1:]
    assert (slot, token, name) == ("on_restart_ack", 7, "batcher_p0")
    assert sorted(held[0]) == [1, 3]  # worker 1 owns the odd slots
    batcher.on_training_done(0, True)  # frees 0 and 1; 1 belongs to the dead worker: parked
    assert _freed(inboxes) == {"rollout_w0": [0]}
    batcher.on_rollout_worker_restarted(1)
    assert _freed(inboxes) == {"rollout_w1": [1]}
    batcher.on_training_done(0, True)  # the next batch (3, 4): worker 1 is back, nothing parked
    assert _freed(inboxes) == {"rollout_w1": [3], "rollout_w0": [4]}


def test_a_restarted_loop_is_sent_to_through_its_spare_inbox():
    first, spare = LocalInbox(), LocalInbox()
    liveness = LoopLiveness(["a"], share=True)
    router = Router({"c": "a"}, {"a": first}, liveness, [spare])
    router.send("c", "x")
    liveness.switch_inbox("a", 0)
    router.send("c", "y")
    assert [m[1] for m in first.get_many()] == ["x"] and [m[1] for m in spare.get_many()] == ["y"]
    copy = pickle.loads(pickle.dumps(liveness))  # a child's view follows later switches
    assert copy.spare_chosen("a") == 0


def test_weights_left_mid_publish_by_a_dead_learner_are_readable_again():
    model = torch.nn.Linear(2, 2)
    weights = PolicyWeights(model.state_dict(), threading.Lock())
    weights.publish(model.state_dict(), 3)
    weights.lock.acquire()  # the learner died inside publish: lock held, sequence odd
    weights.sequence[0] += 1
    assert weights.recover_from_dead_writer()
    assert weights.load_into(torch.nn.Linear(2, 2)) == 3
    weights.publish(model.state_dict(), 4)  # the lock is free for the new learner
    assert not weights.recover_from_dead_writer() and weights.latest_version() == 4


class _Raising(gym.Wrapper):
    """Raises at the listed steps of its life (counted per instance)."""

    def __init__(self, env, raise_at: set[int]):
        super().__init__(env)
        self.raise_at, self.steps = raise_at, 0

    def step(self, action):
        self.steps += 1
        if self.steps in self.raise_at:
            raise RuntimeError(f"boom at {self.steps}")
        return self.env.step(action)


def _runner(raise_at: set[int], new_raise_at: set[int]):
    cfg = default_cfg(env="x")
    cfg.rollout = 8
    info = EnvInfo(gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=2, share=False)
    made = []

    def make(i):
        made.append(i)
        return _Raising(gym.make("CartPole-v1"), new_raise_at)

    envs = [_Raising(gym.make("CartPole-v1"), raise_at), _Raising(gym.make("CartPole-v1"), set())]
    runner = NonBatchedEnvRunner(cfg, info, envs, numpy_views(traj), EpisodeStats(2))
    runner.recovery = EnvRecovery(make, 2)
    runner.state.slots[:] = [0, 1]
    runner.reset([1, 2])
    return runner, traj, made


def test_an_env_that_raises_is_recreated_and_its_step_is_not_trained_on():
    runner, traj, made = _runner(raise_at={3}, new_raise_at=set())
    for _ in range(3):
        runner.step()
    assert made == [0] and runner.recovery.errors == ["RuntimeError: boom at 3"]
    assert traj["dones"][0, 2] == 1 and not traj["valids"][0, 2] and traj["rewards"][0, 2] == 0
    assert traj["valids"][1, 2] and traj["rewards"][1, 2] == 1  # the other env stepped as usual
    assert runner.stats.reward[0] == 0 and runner.stats.length[0] == 0 and not runner.stats.finished
    assert np.all(traj["obs"]["obs"][0, 3].numpy() != 0)  # the new env's first observation follows
    runner.step()  # and it steps on
    assert traj["valids"][0, 3] and runner.stats.length[0] == 1


def test_an_env_that_fails_again_right_after_each_recreation_ends_the_run():
    runner, _, made = _runner(raise_at={1}, new_raise_at={1})
    runner.step()
    runner.step()
    runner.step()
    with pytest.raises(EnvKeepsFailing, match="--env_error_behavior=fail"):
        runner.step()
    assert made == [0, 0, 0]


class _FirstResetRaises(gym.Wrapper):
    def reset(self, **kwargs):
        raise RuntimeError("reset failed at start-up")


def test_an_env_whose_first_reset_raises_is_recreated_before_sampling_starts():
    cfg = default_cfg(env="x")
    cfg.rollout = 8
    info = EnvInfo(gym.make("CartPole-v1").observation_space, gym.spaces.Discrete(2), num_agents=1)
    traj = allocate_trajectories(cfg, info, num_slots=2, share=False)
    envs = [gym.make("CartPole-v1"), _FirstResetRaises(gym.make("CartPole-v1"))]
    runner = NonBatchedEnvRunner(cfg, info, envs, numpy_views(traj), EpisodeStats(2))
    runner.recovery = EnvRecovery(lambda i: gym.make("CartPole-v1"), 2)
    runner.state.slots[:] = [0, 1]
    runner.reset([1, 2])
    assert runner.recovery.errors == ["RuntimeError: reset failed at start-up"]
    assert not isinstance(runner.envs[1], _FirstResetRaises) and np.all(traj["obs"]["obs"][1, 0].numpy() != 0)
    runner.recovery = None  # --env_error_behavior=fail: the error ends the start-up
    runner.envs[1] = _FirstResetRaises(gym.make("CartPole-v1"))
    with pytest.raises(RuntimeError, match="reset failed at start-up"):
        runner.reset([1, 2])


def test_an_env_that_works_between_its_errors_is_recreated_for_as_long_as_it_fails():
    """Errors in a row count only while the new env fails at once: a flaky env with long episodes goes on."""
    runner, _, made = _runner(raise_at={2}, new_raise_at={2})  # every env fails at its second step, forever
    for _ in range(20):
        if runner.state.t == 8:  # the rollout is full: the next one starts (here: in the same slots)
            runner.state.t = 0
        runner.step()
    assert len(made) == 10 and max(runner.recovery.failures_in_row) == 1


@pytest.mark.parametrize("flag", ["heartbeat_timeout", "max_restarts", "max_restarts_total"])
def test_negative_fault_tolerance_flags_are_refused(flag):
    from sample_factory.cfg.validation import ConfigError, validate_cfg

    cfg = default_cfg(env="CartPole-v1")
    cfg.device = "cpu"
    setattr(cfg, flag, -1)
    with pytest.raises(ConfigError, match=f"--{flag}=-1 must be >= 0"):
        validate_cfg(cfg)
