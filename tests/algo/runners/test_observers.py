"""Runner observers and episodic stats handlers, as Sample Factory 2 user scripts drive them."""

from __future__ import annotations

import json
import os

import pytest
from sf_run import run_script
from tb_events import read_scalars

from sample_factory.algo.runners.hooks import ObserverError
from sample_factory.algo.runners.runner import AlgoObserver, Runner
from sample_factory.utils.attr_dict import AttrDict

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK_ORDER = ["on_init", "on_connect_components", "on_start"]


class _Recorder(AlgoObserver):
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_training_step(self, runner, training_iteration_since_resume: int) -> None:
        self.calls.append((runner, training_iteration_since_resume))


def test_base_observer_hooks_are_no_ops():
    observer, runner = AlgoObserver(), Runner(AttrDict())
    for hook in ("on_init", "on_connect_components", "on_start", "on_stop"):
        assert getattr(observer, hook)(runner) is None
    assert observer.on_training_step(runner, 1) is None
    assert observer.extra_summaries(runner, 0, None, 100) is None  # SF2's call order: writer, then env steps


def test_notify_calls_every_observer_with_the_runner():
    runner, first, second = Runner(AttrDict()), _Recorder(), _Recorder()
    runner.register_observer(first)
    runner.register_observer(second)
    runner.hooks.notify("on_training_step", 7)
    assert first.calls == [(runner, 7)] and second.calls == [(runner, 7)]


def test_a_failing_hook_is_named_in_the_error():
    class Broken(AlgoObserver):
        def on_start(self, runner) -> None:
            raise ValueError("nope")

    runner = Runner(AttrDict())
    runner.register_observer(Broken())
    with pytest.raises(ObserverError, match=r"Broken\.on_start failed(.|\n)*ValueError: nope"):
        runner.hooks.notify("on_start")


def test_episode_message_has_the_sample_factory_2_layout():
    runner, seen = Runner(AttrDict()), []
    runner.register_episodic_stats_handler(lambda r, msg, policy_id: seen.append((r, msg, policy_id)))
    runner.hooks.episode_finished(1, 12.5, 40, 3.0, {"kills": 2})
    runner.hooks.episode_finished(0, 1.0, 5, 1.0, None)
    assert seen[0] == (
        runner,
        {
            "episodic": {"reward": 12.5, "len": 40, "true_objective": 3.0, "episode_extra_stats": {"kills": 2}},
            "policy_id": 1,
        },
        1,
    )
    assert seen[1][1]["episodic"]["episode_extra_stats"] == {}


def test_handler_must_be_callable():
    with pytest.raises(TypeError, match="handler"):
        Runner(AttrDict()).register_episodic_stats_handler("not a function")


def _train_with_observer(tmp_path, serial: bool, steps: int):
    result = run_script(
        os.path.join(HERE, "observer_train.py"),
        [
            "--env=renamed_cartpole",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=4",
            f"--train_for_env_steps={steps}",
            f"--serial_mode={serial}",
            "--experiment_summaries_interval=1",
            f"--train_dir={tmp_path}",
            "--experiment=observed",
            "--seed=1",
        ],
        timeout=150,
    )
    assert result.returncode == 0, result.explain()
    folder = tmp_path / "observed"
    with open(folder / "observer_log.json") as f:
        return result, folder, json.load(f)


@pytest.mark.parametrize("serial", [False, True], ids=["parallel", "serial"])
def test_observer_sees_the_whole_run(tmp_path, serial: bool):
    result, folder, log = _train_with_observer(tmp_path, serial, steps=40_000)
    events = log["events"]
    names = [e[0] for e in events]
    assert names[:3] == HOOK_ORDER, names[:5]
    assert events[0] == ["on_init", True]  # env info is not known yet at on_init
    assert events[1] == ["on_connect_components", 1]  # ... and is at on_connect_components
    assert names[-1] == "on_stop" and events[-1][1] >= 40_000
    steps = [e[1] for e in events if e[0] == "on_training_step"]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 5
    assert "extra_summaries" in names
    assert log["episodes"] > 50  # the episodic stats handler saw CartPole's episodes
    written = read_scalars(str(folder / ".summary" / "0"))
    assert "custom/episodes_seen_by_handler" in written  # extra_summaries wrote to the policy's writer
    assert "0_aux/avg_reward" in written
    assert (folder / "config.json").is_file()  # make_runner + init + run prepares the folder like run_rl


def test_process_titles_name_each_role(tmp_path):
    _, _, log = _train_with_observer(tmp_path, serial=False, steps=40_000)
    ps = log["ps"]
    for role in ("rollout_w0 [observed]", "rollout_w1 [observed]", "inference_p0_w0 [observed]"):
        assert role in ps, ps
    assert "learner_p0 batcher_p0 [observed]" in ps, ps


def test_a_failing_observer_stops_the_run_with_failure(tmp_path):
    script = tmp_path / "broken_observer.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {HERE!r})\n"
        "import observer_train as t\n"
        "class Broken(t.RecordingObserver):\n"
        "    def on_training_step(self, runner, it):\n"
        "        if it == 2:\n"
        "            raise RuntimeError('observer bug on purpose')\n"
        "t.RecordingObserver = Broken\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(t.main())\n"
    )
    result = run_script(
        str(script),
        [
            "--env=renamed_cartpole",
            "--device=cpu",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=1000000",
            f"--train_dir={tmp_path}",
            "--experiment=broken",
        ],
        timeout=120,
    )
    assert result.returncode == 1, result.explain()
    assert "Broken.on_training_step failed" in result.output and "observer bug on purpose" in result.output
    assert list((tmp_path / "broken" / "checkpoint_p0").glob("checkpoint_*.pth"))  # progress is kept
