"""One trial's process handling with tiny stand-in scripts: orderly stop once measured, kill at the deadline.

The stand-ins print status lines in the runner's format every 0.1 s, so each test takes a second or two.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
import uuid

import psutil

from sample_factory.tune.trial import TrialPlan, run_trial

# Prints like the runner: a "components ready" line, then status lines with a growing frame count (1000 frames per
# 0.1 s = 10000 FPS), starts a child process (a worker) and maps a /dev/shm file, as trajectory buffers would.
SCRIPT = textwrap.dedent(
    """
    import datetime, mmap, os, signal, subprocess, sys, time
    shm_path, handle_term = sys.argv[1], sys.argv[2] == "orderly"
    stop = []
    signal.signal(signal.SIGTERM, (lambda *_: stop.append(1)) if handle_term else signal.SIG_IGN)
    worker = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                               "signal.SIG_IGN); time.sleep(60)", shm_path])
    with open(shm_path, "wb") as f:
        f.write(bytes(4096))
    mapped = mmap.mmap(os.open(shm_path, os.O_RDWR), 4096)
    def say(msg):
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        print(f"[{stamp}][{os.getpid()}] {msg}", flush=True)
    say("All 4 components ready, collecting experience")
    frames = 0
    while not stop:
        time.sleep(0.1)
        frames += 1000
        say(f"Fps is (10 sec: 10000.0, 60 sec: 0.0, 300 sec: 0.0). Total num frames: {frames}. Throughput: 0: 1.0.")
    say("Learner learner_p0 profile tree view:")
    print("train: 0.5000")
    say("Collected {0: %d}, FPS: 9000.0" % frames)
    worker.kill(); worker.wait()
    os.unlink(shm_path)
    """
)


def _plan(tmp_path, mode: str, seconds: float) -> tuple[TrialPlan, str]:
    script = tmp_path / "fake_train.py"
    script.write_text(SCRIPT)
    shm_path = f"/dev/shm/sf_tune_test_{uuid.uuid4().hex}"
    plan = TrialPlan(
        command=[sys.executable, str(script), shm_path, mode],
        warmup_s=0.3,
        measure_s=1.0,
        deadline=time.time() + seconds,
        log_path=str(tmp_path / "trial.log"),
    )
    return plan, shm_path


def _processes_naming(text: str) -> list[psutil.Process]:
    """Live processes with ``text`` in their command line (the stand-in and its worker both name the shm path)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if process.info["status"] != psutil.STATUS_ZOMBIE and any(text in p for p in process.info["cmdline"] or []):
            found.append(process)
    return found


def test_a_measured_trial_is_stopped_in_order(tmp_path):
    plan, shm_path = _plan(tmp_path, "orderly", seconds=30)
    result = run_trial(plan)
    assert result.outcome == "ok"
    assert result.fps.method == "steady" and 5000 < result.fps.fps < 10100  # 10000 FPS on an idle machine
    assert result.wall_s < 15 and "learner.train" in result.profile
    assert result.peak_rss > 0 and os.path.getsize(plan.log_path) > 0
    assert not os.path.exists(shm_path) and not _processes_naming(shm_path)


def test_a_trial_that_ignores_sigterm_is_killed_at_its_deadline_with_its_children(tmp_path):
    plan, shm_path = _plan(tmp_path, "ignore", seconds=3)
    started = time.time()
    result = run_trial(plan)
    assert result.outcome.startswith("killed")
    assert time.time() - started < 3 + 6  # the deadline plus the reaping
    assert result.fps is not None  # its status lines still give a figure
    assert not _processes_naming(shm_path)
    assert not os.path.exists(shm_path)  # mapped by the trial, removed by the tuner
