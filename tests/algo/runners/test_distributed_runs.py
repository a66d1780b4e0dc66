"""Whole distributed runs of CartPole on two CPU ranks (gloo): a rank that dies stops the other, naming it; Ctrl+C
stops both and rank 0 alone saves; under ``torchrun --max-restarts=1`` the job resumes from the last checkpoint and
ends with identical weights on both ranks (slow), as does a single-machine run resumed on two ranks (slow).

The fast test starts the two ranks itself (the environment torchrun would give them) in serial mode, the quickest to
start; the slow one goes through torchrun and the parallel runner. Every process is reaped and /dev/shm checked.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from sf_run import REPO_ROOT, free_ports, shm_entries

TRAIN_GYM = "sf_examples.train_gym_env"
START_TIMEOUT_S = 150  # two ranks starting on a loaded 2-core machine
STOP_LIMIT_S = 60  # a dead rank must stop the others within this
_DIGEST_RE = re.compile(r"Policy 0 weights digest: ([0-9a-f]+) \(rank (\d) of 2")


class RankProcess:
    """A process (a rank, or torchrun) in its own session, its output collected by a thread."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.output):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"no {pattern!r} in the output (exit {self.proc.poll()}):\n{self.output[-4000:]}")
            time.sleep(0.2)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code

    def reap(self) -> None:
        """Kill the whole session (whatever is left of it) and wait for the main process."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def session_alive(self) -> bool:
        return any(_session_of(p) == self.proc.pid for p in psutil.process_iter())


def _session_of(process: psutil.Process) -> int | None:
    try:
        return os.getsid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None


def _train_args(train_dir: Path, *extra: str) -> list[str]:
    return [
        "--env=CartPole-v1", "--experiment=ddp", f"--train_dir={train_dir}", "--num_workers=1",
        "--num_envs_per_worker=8", "--device=cpu", "--seed=1", "--batch_size=512", *extra,
    ]  # fmt: skip


def _wait_session_gone(rank: RankProcess, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while rank.session_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not rank.session_alive(), "processes of the run outlived it"


def test_a_killed_rank_stops_the_other_within_a_minute_naming_it(tmp_path: Path) -> None:
    before = shm_entries()
    port = free_ports(1)[0]
    args = _train_args(tmp_path, "--serial_mode=True", "--train_for_env_steps=100000000")
    ranks = [
        RankProcess(
            [sys.executable, "-m", TRAIN_GYM, *args],
            {
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "LOCAL_RANK": str(r),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
            },
        )  # fmt: skip
        for r in (0, 1)
    ]
    try:
        for rank in ranks:
            rank.wait_for(r"Fps is", START_TIMEOUT_S)  # both train
        os.killpg(ranks[1].proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        code = ranks[0].wait(timeout=STOP_LIMIT_S + 30)
        stopped_after = time.monotonic() - killed_at
    finally:
        for rank in ranks:
            rank.reap()
    output = ranks[0].output
    assert stopped_after < STOP_LIMIT_S, f"rank 0 stopped {stopped_after:.0f} s after rank 1 was killed:\n{output}"
    assert code == 1, output  # FAILURE
    assert re.search(r"Rank(\(s\))? 1 (sent no heartbeat|stopped|is unreachable)", output), output[-4000:]
    _wait_session_gone(ranks[0])
    assert shm_entries() - before == set()


def _torchrun(train_dir: Path, *extra: str) -> RankProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", *extra[:1]]
    return RankProcess([*cmd, "-m", TRAIN_GYM, *_train_args(train_dir, *extra[1:])], {})


def test_ctrl_c_under_torchrun_stops_both_ranks_and_only_rank_zero_saves(tmp_path: Path) -> None:
    """The terminal's SIGINT reaches torchrun and both ranks; rank 0 writes the one final checkpoint."""
    before = shm_entries()
    torchrun = _torchrun(tmp_path, "--max-restarts=0", "--serial_mode=True", "--train_for_env_steps=100000000")
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(set(re.findall(r"\]\[(\d+)\] Fps is", torchrun.output))) < 2:  # both ranks train
            assert time.monotonic() < deadline, torchrun.output[-3000:]
            time.sleep(0.2)
        os.killpg(torchrun.proc.pid, signal.SIGINT)
        interrupted_at = time.monotonic()
        torchrun.wait(timeout=STOP_LIMIT_S)
        stopped_after = time.monotonic() - interrupted_at
    finally:
        torchrun.reap()
    output = torchrun.output
    assert stopped_after < 30, output[-4000:]
    assert len(re.findall(r"Received SIGINT: stopping", output)) == 2, output[-4000:]
    digests = dict((rank, digest) for digest, rank in _DIGEST_RE.findall(output))
    assert set(digests) == {"0", "1"} and digests["0"] == digests["1"], output[-4000:]
    folder = tmp_path / "ddp"
    assert len(list((folder / "checkpoint_p0").glob("checkpoint_*.pth"))) == 1
    assert "save_checkpoint" in (folder / "sf_log.txt").read_text()  # the learner's timing tree of rank 0
    assert "save_checkpoint" not in (folder / "sf_log_rank1.txt").read_text()
    assert not (folder / "done").exists()
    _wait_session_gone(torchrun)
    assert shm_entries() - before == set()


@pytest.mark.slow
def test_a_single_machine_run_resumes_on_two_ranks_from_its_checkpoint(tmp_path: Path) -> None:
    """Every rank starts from rank 0's latest checkpoint, whatever the number of ranks that wrote it (logged)."""
    before = shm_entries()
    args = _train_args(tmp_path, "--serial_mode=True", "--train_for_env_steps=4096")
    single = RankProcess([sys.executable, "-m", TRAIN_GYM, *args], {})
    try:
        assert single.wait(timeout=START_TIMEOUT_S) == 0, single.output[-3000:]
    finally:
        single.reap()
    resumed = _torchrun(tmp_path, "--max-restarts=0", "--serial_mode=True", "--train_for_env_steps=12288")
    try:
        code = resumed.wait(timeout=START_TIMEOUT_S)
    finally:
        resumed.reap()
    output = resumed.output
    assert code == 0, output[-4000:]
    assert re.search(r"Policy 0 resumed at train step [1-9]\d*, env steps [1-9]", output), output[-4000:]
    assert "the checkpoint was written by a run of 1 rank(s), this run has 2" in output
    starts = re.findall(
        r"starts from rank 0's weights \(train step (\d+), env steps (\d+), weights digest (\w+)", output
    )
    assert len(starts) == 2 and starts[0] == starts[1] and starts[0][0] != "0", starts
    digests = {rank: digest for digest, rank in _DIGEST_RE.findall(output)}
    assert set(digests) == {"0", "1"} and digests["0"] == digests["1"], output[-4000:]
    assert (tmp_path / "ddp" / "done").read_text().strip().isdigit()
    _wait_session_gone(resumed)
    assert shm_entries() - before == set()


def _pid_of_rank(torchrun: RankProcess, rank: int) -> int:
    """The pid of torchrun's worker process of ``rank`` (its environment says RANK)."""
    for child in psutil.Process(torchrun.proc.pid).children(recursive=True):
        try:
            if child.environ().get("RANK") == str(rank) and "--experiment=ddp" in child.cmdline():
                return child.pid
        except psutil.Error:
            continue
    raise AssertionError(f"no worker of rank {rank} under torchrun:\n{torchrun.output[-3000:]}")


@pytest.mark.slow
def test_torchrun_restarts_the_job_after_a_rank_is_killed_and_it_resumes_from_the_checkpoint(tmp_path: Path) -> None:
    before = shm_entries()
    torchrun = _torchrun(tmp_path, "--max-restarts=1", "--train_for_env_steps=150000", "--save_every_sec=3")
    checkpoints = tmp_path / "ddp" / "checkpoint_p0"
    try:
        torchrun.wait_for(r"Fps is", START_TIMEOUT_S)
        deadline = time.monotonic() + 60
        while not list(checkpoints.glob("checkpoint_*.pth")) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert list(checkpoints.glob("checkpoint_*.pth")), torchrun.output[-3000:]
        os.kill(_pid_of_rank(torchrun, 1), signal.SIGKILL)
        code = torchrun.wait(timeout=400)
    finally:
        torchrun.reap()
    output = torchrun.output
    assert code == 0, output[-6000:]
    assert re.search(r"Policy 0 resumed at train step [1-9]\d*", output), output[-6000:]
    final = dict((rank, digest) for digest, rank in _DIGEST_RE.findall(output.split("resumed at train step")[-1]))
    assert set(final) == {"0", "1"} and final["0"] == final["1"], output[-6000:]
    assert (tmp_path / "ddp" / "done").is_file()
    _wait_session_gone(torchrun)
    assert shm_entries() - before == set()
