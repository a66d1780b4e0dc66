"""Loop specs say what each loop holds (kind, worker index, policy): the runners read those fields, never names."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.runners.child_process import process_title
from sample_factory.algo.runners.components import LoopSpec, component_kinds, rollout_worker_names
from sample_factory.algo.runners.runner_component import RunnerComponent
from sample_factory.algo.utils.wiring import RUNNER, learner_name
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sample_factory.train import training_loop_specs


def _build(router, shared):  # never called here: the specs are only read
    raise AssertionError("not built in these tests")


def _cfg(tmp_path=None):
    cfg = default_cfg(env="x", experiment="specs")
    cfg.num_policies, cfg.policy_workers_per_policy, cfg.num_workers = 2, 2, 3
    if tmp_path is not None:
        cfg.train_dir = str(tmp_path)
    return cfg


def test_every_spec_carries_its_kind_worker_index_and_policy() -> None:
    specs = training_loop_specs(_cfg())
    fields = [(s.kind, s.worker_idx, s.policy_id) for s in specs]
    assert fields == [
        ("learner", None, 0),
        ("learner", None, 1),
        ("inference", 0, 0),
        ("inference", 1, 0),
        ("inference", 0, 1),
        ("inference", 1, 1),
        ("rollout", 0, None),
        ("rollout", 1, None),
        ("rollout", 2, None),
    ]
    kinds = component_kinds(specs)
    assert kinds["batcher_p1"] == "batcher" and kinds["learner_p1"] == "learner"
    assert kinds["inference_p1_w0"] == "inference" and kinds["rollout_w2"] == "rollout"


@pytest.mark.parametrize(
    "kind, fields, missing",
    [("rollout", {}, "worker_idx"), ("inference", {"worker_idx": 0}, "policy_id"), ("learner", {}, "policy_id")],
)
def test_a_spec_without_its_index_is_refused_naming_the_field(kind, fields, missing) -> None:
    with pytest.raises(ValueError, match=missing):
        LoopSpec("loop", kind, ["c"], _build, **fields)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="kind 'actor'"):
        LoopSpec("loop", "actor", ["c"], _build, worker_idx=0)


def _odd_specs() -> list[LoopSpec]:
    """Names that follow no pattern and specs out of order: only the fields can tell who is who."""
    return [
        LoopSpec("loop_c", "rollout", ["walker_ten"], _build, worker_idx=10),
        LoopSpec("loop_l", "learner", ["gatherer", learner_name(4)], _build, policy_id=4),
        LoopSpec("loop_a", "rollout", ["walker_two"], _build, worker_idx=2),
        LoopSpec("loop_i", "inference", ["thinker"], _build, worker_idx=0, policy_id=4),
        LoopSpec("loop_b", "rollout", ["walker_five"], _build, worker_idx=5),
    ]


def test_rollout_workers_are_ordered_by_their_index_not_their_name() -> None:
    assert rollout_worker_names(_odd_specs()) == ["walker_two", "walker_five", "walker_ten"]
    kinds = component_kinds(_odd_specs())
    assert kinds == {
        "walker_ten": "rollout",
        "gatherer": "batcher",
        learner_name(4): "learner",
        "walker_two": "rollout",
        "thinker": "inference",
        "walker_five": "rollout",
    }


def test_process_title_puts_the_learner_first_by_kind() -> None:
    cfg = _cfg()
    assert process_title(_odd_specs()[1], cfg) == f"{learner_name(4)} gatherer [specs]"


def _runner(tmp_path) -> tuple[RunnerComponent, dict]:
    cfg = _cfg(tmp_path)
    names = [n for s in _odd_specs() for n in s.component_names]
    inboxes = {"main": LocalInbox(), "others": LocalInbox()}
    router = Router({RUNNER: "main", **dict.fromkeys(names, "others")}, inboxes)
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    runner = RunnerComponent(cfg, info, router)
    runner.attach(EventLoop("main", inboxes["main"], router), _odd_specs())
    return runner, inboxes


def test_runner_starts_sampling_in_the_rollout_workers_and_lets_the_learner_save(tmp_path) -> None:
    runner, inboxes = _runner(tmp_path)
    for name in runner.component_names:
        runner.on_component_ready(name)
    begun = inboxes["others"].get_many()
    assert begun == [(w, "on_begin_sampling", ()) for w in ("walker_two", "walker_five", "walker_ten")]
    runner.request_stop(save=True)
    stops = {name: args for name, slot, args in inboxes["others"].get_many() if slot == "on_stop_requested"}
    assert stops[learner_name(4)] == (True,)  # only the learner takes the save flag
    assert stops["thinker"] == () and stops["walker_two"] == ()
    assert stops["gatherer"] == (), "the batcher is a component of its own: the runner stops it too"
    assert runner._report_order() == ["walker_two", "walker_ten", "gatherer", learner_name(4), "thinker"]
    runner.writers.close()
