"""--learner_main_loop_num_cores reaches training, and --load_checkpoint_kind=best does not pretend to steer resume."""

from __future__ import annotations

import json
import os
import queue
import threading

import torch
from sf_run import run_script

from sample_factory.algo.learning.learner_worker import LearnerWorker
from sample_factory.messaging.event_loop import EventLoop, Router

HERE = os.path.dirname(os.path.abspath(__file__))
BEST_WARNING = "--load_checkpoint_kind=best is ignored here: resuming training always continues from the latest"


def test_training_thread_trains_with_the_learners_thread_count() -> None:
    """torch's thread count is per process: the background training thread must not reset it to 1."""
    seen: list[int] = []
    worker = LearnerWorker.__new__(LearnerWorker)  # only what _training_thread touches
    worker.cfg, worker.name = None, "learner_p0"
    inbox = queue.Queue()
    worker.loop = EventLoop("main", inbox, Router({"learner_p0": "main"}, {"main": inbox}))
    worker._train = lambda prepared, generation: seen.append(torch.get_num_threads())
    worker.train_queue = queue.Queue()
    worker.train_queue.put((0, "prepared batch", 0))  # batch index, prepared batch, weights generation
    worker.train_queue.put(None)  # then stop
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)  # what on_start sets from --learner_main_loop_num_cores
        thread = threading.Thread(target=worker._training_thread)
        thread.start()
        thread.join(timeout=10)
        assert seen == [3]
        assert worker.loop.inbox.get_nowait()[1] == "on_training_done"
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def _train(tmp_path, steps: int, *extra: str):
    args = [
        "--env=threads_cartpole",
        "--device=cpu",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=4",
        "--learner_main_loop_num_cores=2",
        f"--train_for_env_steps={steps}",
        f"--train_dir={tmp_path}",
        "--experiment=threads",
        *extra,
    ]
    result = run_script(os.path.join(HERE, "threads_train.py"), args, timeout=150)
    assert result.returncode == 0, result.explain()
    with open(tmp_path / "threads" / "threads_log.json") as f:
        return result, json.load(f)


def test_serial_training_runs_with_the_learners_threads_and_resume_ignores_best(tmp_path) -> None:
    result, counts = _train(tmp_path, 2048)
    assert counts and set(counts) == {2}, counts  # the inference worker's 1 thread used to win in serial mode
    assert BEST_WARNING not in result.output
    result, _ = _train(tmp_path, 4096, "--load_checkpoint_kind=best")
    assert "resumed at train step" in result.output
    assert BEST_WARNING in result.output
