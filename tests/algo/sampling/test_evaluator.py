"""The evaluator on an in-process event loop: it plays its episodes with the weights published when a round starts,
reports averages tagged with the requested env steps, survives a crashing eval env, refuses an env the policy
cannot act in, and stops mid-round."""

from __future__ import annotations

import queue

import gymnasium as gym
import numpy as np
import pytest
import torch
from sampling_helpers import cartpole_sampling_cfg

from sample_factory.algo.runners.setup import initial_policy_weights, obtain_env_info
from sample_factory.algo.sampling.evaluator import Evaluator
from sample_factory.algo.utils.checkpoints import best_checkpoint_value, list_best_checkpoints, load_checkpoint_file
from sample_factory.algo.utils.context import reset_global_context
from sample_factory.algo.utils.wiring import RUNNER, evaluator_name
from sample_factory.envs.env_utils import register_env
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router

MAX_ITERATIONS = 20_000


class CrashOnce(gym.Wrapper):
    """CartPole whose first instance raises on its 5th step: one failed evaluation round."""

    crashed = False

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if not CrashOnce.crashed and self.steps == 5:
            CrashOnce.crashed = True
            raise RuntimeError("the eval env broke")
        return self.env.step(action)


def make_crash_once(_name, _cfg=None, _env_config=None, _render_mode=None):
    return CrashOnce()


def make_mountain_car(_name, _cfg=None, _env_config=None, _render_mode=None):
    return gym.make("MountainCar-v0")


@pytest.fixture(autouse=True)
def _fresh_context_one_thread():
    """Fresh registries; one torch thread (a tiny policy gains nothing from more on a busy shared CPU)."""
    reset_global_context()
    num_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(num_threads)
    reset_global_context()


class EvaluatorLoop:
    """The evaluator alone on a loop; what it sends the runner is collected from the runner's inbox."""

    def __init__(self, tmp_path, *flags: str, seed: int | None = 3) -> None:
        small = ("--encoder_mlp_layers", "32", "--rnn_size=16", *([] if seed is None else [f"--seed={seed}"]))
        self.cfg = cartpole_sampling_cfg(tmp_path, "evaluator", "--eval_every_env_steps=100", *small, *flags)
        self.env_info = obtain_env_info(self.cfg)
        self.weights = initial_policy_weights(self.cfg, self.env_info, serial=True)
        self.router = Router({evaluator_name(): "e", RUNNER: "rest"}, {"e": LocalInbox(), "rest": LocalInbox()})
        self.loop = EventLoop("e", self.router.inboxes["e"], self.router, idle_timeout=0.0)
        self.evaluator = Evaluator(self.cfg, self.env_info, self.router, self.weights, serial=True)
        self.loop.add_component(self.evaluator)
        self.loop.start_components()

    def messages(self) -> list[tuple]:
        try:
            return [(slot, *args) for _, slot, args in self.router.inboxes["rest"].get_many(block=False)]
        except queue.Empty:
            return []

    def run_until(self, slot: str) -> tuple:
        """Iterate the loop until the evaluator sends ``slot`` to the runner; returns that message."""
        for _ in range(MAX_ITERATIONS):
            self.loop.run_once()
            for message in self.messages():
                if message[0] == slot:
                    return message
        raise AssertionError(f"the evaluator sent no {slot} in {MAX_ITERATIONS} loop iterations")


def test_a_round_plays_its_episodes_with_the_weights_published_when_it_starts(tmp_path):
    harness = EvaluatorLoop(tmp_path, "--eval_episodes=3", "--eval_num_envs=2")
    assert ("on_component_ready", evaluator_name()) in harness.messages()
    model = harness.evaluator.stepper.model
    published = {key: value + 0.01 for key, value in model.state_dict().items()}
    harness.weights[0].publish(published, version=7)
    harness.router.send(evaluator_name(), "on_evaluate", 0, 1234)
    _, policy_id, env_steps, results = harness.run_until("on_evaluation_done")
    assert (policy_id, env_steps) == (0, 1234)
    assert results["episodes"] == 3 and results["policy_version"] == 7
    assert 8 <= results["avg_reward"] <= 500 and results["avg_episode_len"] == results["avg_reward"]  # CartPole
    assert results["env_steps_played"] >= 3 * results["avg_episode_len"] - 1e-6
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, published[key])


def _first_observations_of_two_rounds(harness: EvaluatorLoop) -> list[np.ndarray]:
    starts = []
    begin = harness.evaluator.stepper.begin

    def recording_begin(tracker, seeds) -> None:
        begin(tracker, seeds)
        starts.append(np.stack(harness.evaluator.stepper.obs))

    harness.evaluator.stepper.begin = recording_begin
    scores = []
    for env_steps in (100, 200):
        harness.router.send(evaluator_name(), "on_evaluate", 0, env_steps)
        scores.append(harness.run_until("on_evaluation_done")[3])
    return starts, scores


def test_with_a_seed_every_round_starts_from_the_same_states(tmp_path):
    starts, scores = _first_observations_of_two_rounds(EvaluatorLoop(tmp_path, "--eval_episodes=4"))
    np.testing.assert_array_equal(starts[0], starts[1])
    unseeded, _ = _first_observations_of_two_rounds(EvaluatorLoop(tmp_path, "--eval_episodes=4", seed=None))
    assert not np.array_equal(unseeded[0], unseeded[1])
    deterministic = EvaluatorLoop(tmp_path, "--eval_episodes=4", "--eval_deterministic=True")
    _, scores = _first_observations_of_two_rounds(deterministic)
    same = ("avg_reward", "std_reward", "min_reward", "max_reward", "env_steps_played")
    assert [scores[0][k] for k in same] == [scores[1][k] for k in same]  # same weights and starts, no sampling


def test_a_crashing_eval_env_fails_one_round_and_the_next_one_works(tmp_path):
    register_env("crash_once", make_crash_once)
    CrashOnce.crashed = False
    harness = EvaluatorLoop(tmp_path, "--eval_env=crash_once", "--eval_episodes=2")
    harness.router.send(evaluator_name(), "on_evaluate", 0, 100)
    _, policy_id, env_steps, error = harness.run_until("on_evaluation_failed")
    assert (policy_id, env_steps) == (0, 100) and "the eval env broke" in error
    harness.router.send(evaluator_name(), "on_evaluate", 0, 200)
    assert harness.run_until("on_evaluation_done")[3]["episodes"] == 2


def test_an_eval_env_with_other_spaces_is_refused_naming_the_flag(tmp_path):
    register_env("mountain_car", make_mountain_car)
    harness = EvaluatorLoop(tmp_path, "--eval_env=mountain_car")
    errors = [m for m in harness.messages() if m[0] == "on_component_error"]
    assert len(errors) == 1
    assert errors[0][2].startswith("--eval_env=mountain_car has observation space")  # the message, no traceback
    assert "cannot act there" in errors[0][2]


def test_a_stop_request_ends_a_round_under_way(tmp_path):
    harness = EvaluatorLoop(tmp_path, "--eval_episodes=50")
    harness.router.send(evaluator_name(), "on_evaluate", 0, 100)
    for _ in range(5):
        harness.loop.run_once()
    assert harness.evaluator.current is not None
    harness.router.send(evaluator_name(), "on_stop_requested")
    assert harness.run_until("on_component_stopped")[1] == evaluator_name()
    assert harness.evaluator.current is None and harness.evaluator.envs == []
    assert not harness.loop.running


def test_the_best_checkpoint_by_an_evaluation_metric_holds_the_evaluated_weights(tmp_path):
    flags = ("--eval_episodes=3", "--eval_deterministic=True", "--save_best_metric=eval/avg_reward")
    harness = EvaluatorLoop(tmp_path, *flags, "--save_best_after=0")
    model = harness.evaluator.stepper.model
    published = {key: value - 0.02 for key, value in model.state_dict().items()}
    harness.weights[0].publish(published, version=9)
    harness.router.send(evaluator_name(), "on_evaluate", 0, 500)
    score = harness.run_until("on_evaluation_done")[3]["avg_reward"]
    (path,) = list_best_checkpoints(harness.cfg, 0)
    assert path.endswith(f"best_000000009_500_eval_avg_reward_{score:.3f}.pth")
    state = load_checkpoint_file(path)
    assert state["policy_version"] == 9 and state["env_steps"] == 500
    for key, value in state["model"].items():
        torch.testing.assert_close(value, published[key])
    harness.router.send(evaluator_name(), "on_evaluate", 0, 600)  # the same score: not a new best
    harness.run_until("on_evaluation_done")
    assert list_best_checkpoints(harness.cfg, 0) == [path]
    assert best_checkpoint_value(harness.cfg, 0, "eval/avg_reward") == pytest.approx(score, abs=1e-3)
    assert best_checkpoint_value(harness.cfg, 0, "reward") is None
