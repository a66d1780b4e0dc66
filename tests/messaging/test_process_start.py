"""Worker processes start from the fork server (torch and the workers' modules imported once), or are spawned."""

from __future__ import annotations

import os
from functools import partial

import pytest
from sf_run import run_python, short_run_args

from sample_factory.algo.runners.child_processes import _build_modules
from sample_factory.algo.runners.components import LoopSpec
from sample_factory.messaging import process_start

HERE = os.path.dirname(os.path.abspath(__file__))


def _build(name: str, router, shared):  # never called: only its module is read
    raise AssertionError(name)


def test_the_fork_server_is_the_default_and_spawn_can_be_asked_for(monkeypatch) -> None:
    monkeypatch.delenv(process_start.START_METHOD_ENV, raising=False)
    assert process_start.start_method() == "forkserver"
    monkeypatch.setenv(process_start.START_METHOD_ENV, "spawn")
    assert process_start.worker_context(["json"]).get_start_method() == "spawn"
    monkeypatch.setenv(process_start.START_METHOD_ENV, "fork")
    with pytest.raises(ValueError, match="SF_WORKER_START_METHOD='fork': use forkserver"):
        process_start.start_method()


def test_the_server_preloads_the_modules_that_build_the_loops() -> None:
    specs = [
        LoopSpec("a", "rollout", ["a"], partial(_build, "a"), worker_idx=0),
        LoopSpec("b", "rollout", ["b"], _build, worker_idx=1),
    ]
    assert _build_modules(specs) == [__name__]


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_workers_run_the_atexit_handlers_of_user_code(tmp_path, monkeypatch, method: str) -> None:
    """A worker forked from the server ends with os._exit; it must still run what user code registered at exit."""
    monkeypatch.setenv(process_start.START_METHOD_ENV, method)
    monkeypatch.setenv("SF_TEST_MARKER_DIR", str(tmp_path))
    args = short_run_args(tmp_path, "atexit_cartpole", 2048, num_workers=2, num_envs_per_worker=2)
    result = run_python([os.path.join(HERE, "atexit_env_train.py"), *args], timeout=120)
    assert result.returncode == 0, result.explain()
    markers = [name for name in os.listdir(tmp_path) if name.startswith("atexit_") and name.endswith(".txt")]
    assert len(markers) == 3, (
        f"the runner (its env-info env) and both rollout workers must write one: {markers}\n{result.explain()}"
    )
