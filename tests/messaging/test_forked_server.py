"""The fork server forked from the runner: workers see what a new interpreter gives them; used only where safe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import types

import gymnasium
import pytest
from sf_run import run_module, run_python, short_run_args

from sample_factory.compat import multiprocessing_internals as forked_server
from sample_factory.messaging import process_start

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


def _package_outside_site_dirs(root, name: str, monkeypatch) -> types.ModuleType:
    """Import a one-module package ``name`` from ``root`` (a folder on no site path, as with ``PYTHONPATH``); it
    leaves ``sys.modules`` with the test."""
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, name, raising=False)
    module = __import__(name)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_packages_outside_site_dirs_stay_when_a_staying_module_holds_them(tmp_path, monkeypatch) -> None:
    """Dropped: the main module and packages from other folders that nothing staying holds (a new interpreter
    imports them afresh). Kept: what a staying module holds, a module of it or a class, directly or through
    another held package, and every submodule of a staying package (``torch.ops`` has no real file)."""
    names = ("sf_held_module", "sf_held_class", "sf_held_by_held", "sf_not_held")
    held_module, held_class_pkg, held_by_held, _ = (_package_outside_site_dirs(tmp_path, n, monkeypatch) for n in names)
    monkeypatch.setattr(forked_server, "_test_held_module", held_module, raising=False)
    monkeypatch.setattr(forked_server, "_test_held_class", held_class_pkg.Thing, raising=False)
    monkeypatch.setattr(held_module, "thing", held_by_held.Thing, raising=False)
    dropped = {name.partition(".")[0] for name in forked_server.user_module_names()}
    assert "__main__" in dropped and "sf_not_held" in dropped, dropped
    assert not dropped & {"sf_held_module", "sf_held_class", "sf_held_by_held", "torch", "sample_factory"}, dropped


def test_a_run_with_gymnasium_on_pythonpath_trains_from_a_forked_server(tmp_path, monkeypatch) -> None:
    """Packages installed into a folder on ``PYTHONPATH`` (``pip install --target``, a cluster's module system) are
    outside the site directories: gymnasium there must stay in the forked server with this package, which made
    the env's spaces with it, or the workers unpickle them as instances of a second gymnasium."""
    folder = tmp_path / "on_pythonpath"
    shutil.copytree(os.path.dirname(gymnasium.__file__), folder / "gymnasium")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    where = subprocess.run([sys.executable, "-c", "import gymnasium; print(gymnasium.__file__)"], capture_output=True,
                           text=True, timeout=60, check=True)  # fmt: skip
    assert where.stdout.startswith(str(folder)), where.stdout
    args = short_run_args(tmp_path, "CartPole-v1", 1024, num_workers=2, num_envs_per_worker=2)
    result = run_module("sf_examples.train_gym_env", args)
    assert result.returncode == 0, result.explain()
    assert FORKED_LINE in result.output, result.explain()


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
    "from sample_factory.compat import multiprocessing_internals as m; print('BLOCKER', m.fork_blocker(False, False))"
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
