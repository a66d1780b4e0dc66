"""The fork server forked from the runner: workers see what a new interpreter gives them; used only where safe."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from sf_run import run_python, short_run_args

from sample_factory.messaging import forked_server, process_start

HERE = os.path.dirname(os.path.abspath(__file__))
FORKED_LINE = "Workers start from a copy of this process"
NEW_SERVER_LINE = "Workers start from a new fork server process"


def _seen_by_workers(marker_dir, runner_pid: int) -> list[tuple[str, str, int]]:
    """(script setting, helper setting, parent pid) written by each env created outside the runner."""
    seen = []
    for name in os.listdir(marker_dir):
        pid = int(name.removeprefix("seen_").removesuffix(".txt"))
        if pid == runner_pid:  # an exact match: a worker's pid may be a substring of the runner's
            continue
        with open(os.path.join(marker_dir, name)) as f:
            script, helper, parent = f.read().strip().split("|")
        seen.append((script, helper, int(parent)))
    return seen


@pytest.mark.parametrize("from_runner", ["1", "0"])
def test_workers_see_user_modules_as_imported_and_each_run_has_its_own_server(tmp_path, monkeypatch, from_runner):
    """``main()`` changed a global of the script and of a module it imports: the workers must see both as the files
    define them, whether the server was forked from the runner or is a new interpreter. A forked server ends with
    its run; the next run of the process forks a fresh one, or starts a new interpreter where the first run left an
    OpenMP pool in the runner (the probe's verdict)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("SF_TEST_MARKER_DIR", str(markers))
    monkeypatch.setenv("SF_TEST_RUNS", "2")
    monkeypatch.setenv(process_start.FORK_FROM_RUNNER_ENV, from_runner)
    monkeypatch.delenv(process_start.START_METHOD_ENV, raising=False)
    args = short_run_args(tmp_path, "user_cartpole", 1024, num_workers=2, num_envs_per_worker=2)
    result = run_python([os.path.join(HERE, "forked_server_train.py"), *args], timeout=180)
    assert result.returncode == 0, result.explain()
    runner_pid = int(result.output.split("][", 1)[1].split("]", 1)[0])  # the pid field of the runner's first line
    seen = _seen_by_workers(markers, runner_pid)
    assert len(seen) == 4, f"one file per worker process, 2 runs x 2 workers: {seen}"
    assert {(script, helper) for script, helper, _ in seen} == {("as imported", "as imported")}
    servers = {parent for _, _, parent in seen}
    assert len(servers) == (2 if from_runner == "1" else 1), f"the servers that started the workers: {servers}"
    first_run, second_run = result.output.split("\nSERVER ", 1)
    if from_runner == "0":
        assert NEW_SERVER_LINE in first_run and NEW_SERVER_LINE not in second_run, result.explain()
        return
    assert FORKED_LINE in first_run and second_run.startswith("None"), "the forked server must end with its run"
    assert FORKED_LINE in second_run or f"{NEW_SERVER_LINE}: it imports torch again (a forked child" in second_run


def test_blockers_that_need_no_probe(monkeypatch) -> None:
    assert "CUDA" in forked_server.fork_blocker(uses_cuda=True, distributed=False)
    assert "distributed" in forked_server.fork_blocker(uses_cuda=False, distributed=True)
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert "Python threads" in forked_server.fork_blocker(uses_cuda=False, distributed=False)
    finally:
        release.set()
        thread.join()


_BLOCKER_OF_FRESH_PROCESS = (
    "from sample_factory.messaging import forked_server; print('BLOCKER', forked_server.fork_blocker(False, False))"
)


@pytest.mark.parametrize("parallel_op_first", [False, True])
def test_a_process_that_ran_a_parallel_torch_op_before_the_import_is_never_forked(parallel_op_first: bool) -> None:
    """An OpenMP pool started before the package was imported is invisible to the thread count; the probe (a forked
    child that would hang on its first parallel operation) catches it, and a fresh process passes."""
    before = "import torch; torch.set_num_threads(2); torch.ones(1 << 18).sum(); " if parallel_op_first else ""
    out = subprocess.run(
        [sys.executable, "-c", before + _BLOCKER_OF_FRESH_PROCESS], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    line = [line for line in out.stdout.splitlines() if line.startswith("BLOCKER")][0]
    if parallel_op_first:
        assert "OpenMP" in line, line
    else:
        assert line == "BLOCKER None", line
