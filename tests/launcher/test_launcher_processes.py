"""The processes backend end to end: a real 2x2 CartPole sweep, a failing experiment, GPUs, Ctrl+C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
from launcher_helpers import (
    CARTPOLE,
    LAUNCHER,
    SWEEP_NAMES,
    launcher_env,
    processes_with,
    python_cmd,
    run_launcher,
    sweep_module,
    table_rows,
    wait_for,
    write_run_module,
)
from sf_run import shm_entries

LOCAL = ["--backend=processes", "--pause_between=0", "--num_gpus=0"]


def test_sweep_of_four_runs_two_at_a_time(tmp_path: Path) -> None:
    train_dir = tmp_path / "td"
    before = shm_entries()
    code, output = run_launcher([f"--run={sweep_module(tmp_path)}", *LOCAL, "--max_parallel=2",
                                 f"--train_dir={train_dir}"])  # fmt: skip
    assert code == 0, output
    rows = table_rows(output)
    assert sorted(rows) == SWEEP_NAMES
    assert all(row[1] == "done" and row[2] == "0" for row in rows.values()), output
    for name in SWEEP_NAMES:
        folder = train_dir / "sweep" / name
        assert (folder / "config.json").is_file() and (folder / "done").is_file(), name
        log = (train_dir / "sweep" / "launcher_logs" / f"{name}.out").read_text()
        assert f"--experiment={name} --train_dir={train_dir / 'sweep'}" in log  # the command, as the header line
    # never more than two at a time: each start line comes when fewer than two run
    running = [int(m) for m in re.findall(r"\[launcher\] (\d+) running", output)]
    assert running and max(running) == 2
    assert not processes_with(str(train_dir)), "experiment processes outlived the launcher"
    assert shm_entries() - before == set()


def test_failing_experiment_is_reported_failed_with_its_error(tmp_path: Path) -> None:
    fail = python_cmd("import sys; print('bad config', file=sys.stderr); sys.exit(3)")
    ok = python_cmd("pass")
    module = write_run_module(tmp_path, "mixed", f'Experiment("ok", {ok!r}), Experiment("broken", {fail!r})')
    code, output = run_launcher([f"--run={module}", *LOCAL, f"--train_dir={tmp_path}"])
    assert code == 1, output
    rows = table_rows(output)
    assert rows["00_ok"][1:3] == ["done", "0"]
    assert rows["01_broken"][1:3] == ["failed", "3"]
    assert "01_broken failed; last lines of" in output and "    bad config" in output
    assert "1 of 2 experiment(s) failed: 01_broken" in output


def test_gpus_are_handed_out_round_robin_with_a_limit_per_gpu(tmp_path: Path) -> None:
    show = python_cmd("import os, time; print('gpu=' + os.environ['CUDA_VISIBLE_DEVICES']); time.sleep(2)")
    module = write_run_module(tmp_path, "gpus", f'Experiment("g", {show!r}, ParamGrid([("seed", seeds(3))]))')
    code, output = run_launcher([f"--run={module}", "--backend=processes", "--pause_between=0", "--num_gpus=2",
                                 "--experiments_per_gpu=1", f"--train_dir={tmp_path}"])  # fmt: skip
    assert code == 0, output
    logs = tmp_path / "gpus" / "launcher_logs"
    seen = [re.search(r"^gpu=(\d*)$", (logs / f"{n}.out").read_text(), re.M).group(1) for n in ("00_g_seed_0",
            "01_g_seed_1111", "02_g_seed_2222")]  # fmt: skip
    assert seen == ["0", "1", "0"]
    running = [int(m) for m in re.findall(r"\[launcher\] (\d+) running", output)]
    assert max(running) == 2  # --experiments_per_gpu=1 on 2 GPUs, although --max_parallel is 4


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _trees(pids: list[int]) -> list[psutil.Process]:
    """Every process of the experiments once each one has spawned children; [] before that."""
    try:
        children = [psutil.Process(pid).children(recursive=True) for pid in pids]
    except psutil.NoSuchProcess:
        return []
    return [psutil.Process(pid) for pid in pids] + sum(children, []) if all(children) else []


def test_ctrl_c_stops_every_experiment_and_its_workers(tmp_path: Path) -> None:
    """Parallel-mode runs (a process tree each) are stopped; the launcher reports them and leaves nothing behind."""
    train_dir = tmp_path / "td"
    long_run = CARTPOLE.replace("--serial_mode=True", "--serial_mode=False") + " --train_for_env_steps=1000000000"
    module = write_run_module(tmp_path, "long", f'Experiment("cp", {long_run!r}, ParamGrid([("seed", seeds(2))]))')
    before = shm_entries()
    launcher = subprocess.Popen(
        [sys.executable, "-m", LAUNCHER, f"--run={module}", *LOCAL, "--max_parallel=2", f"--train_dir={train_dir}"],
        env=launcher_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        pids = []
        for line in launcher.stdout:
            found = re.search(r"started \S+ \(pid (\d+)", line)
            if found:
                pids.append(int(found.group(1)))
            if len(pids) == 2:
                break
        assert len(pids) == 2
        # interrupt once both runs have spawned their workers, so that whole trees must be stopped
        trees = wait_for(lambda: _trees(pids), timeout=90, what="the runs' worker processes")
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=90)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert launcher.returncode == 130, output
    rows = table_rows(output)
    assert [rows[n][1] for n in ("00_cp_seed_0", "01_cp_seed_1111")] == ["stopped", "stopped"], output
    assert "interrupted: stopped 00_cp_seed_0, 01_cp_seed_1111" in output
    assert not processes_with(str(train_dir)), "processes of the experiments are still running"
    alive = [p for p in trees if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"still running: {alive}"
    # each experiment's process group is empty (zombies awaiting their reaper, init, are not running)
    members = [p for p in psutil.process_iter(["status"]) if _pgid(p.pid) in pids]
    assert not [p for p in members if p.info["status"] != psutil.STATUS_ZOMBIE], members
    assert shm_entries() - before == set()
