"""Serial mode's stall watchdog: a main thread that stops iterating is reported with its stack, and the run ends."""

from __future__ import annotations

import threading

from sf_run import run_module

from sample_factory.messaging.stall_watchdog import StallWatchdog


def env_step_that_hangs(released: threading.Event) -> None:
    assert released.wait(timeout=60), "the watchdog never reported the stall"


def test_a_silent_thread_is_reported_with_where_it_is_stuck():
    released = threading.Event()
    messages: list[str] = []

    def on_stall(message: str) -> None:
        messages.append(message)
        released.set()

    watchdog = StallWatchdog(0.2, 0.2, lambda: "resume hint", on_stall=on_stall)
    watchdog.start()
    try:
        watchdog.beat()  # the loop has started: the per-iteration limit applies
        env_step_that_hangs(released)
    finally:
        watchdog.stop()
    (message,) = messages
    assert "no progress for" in message and "(--heartbeat_timeout=0.2)" in message
    assert "env_step_that_hangs" in message  # the stuck thread's stack names the function it is in
    assert message.endswith("resume hint")


def test_start_up_gets_its_own_longer_limit():
    released = threading.Event()
    messages: list[str] = []
    watchdog = StallWatchdog(0.1, 0.4, on_stall=lambda m: (messages.append(m), released.set()))
    watchdog.start()
    try:
        env_step_that_hangs(released)  # no beat yet: a hang while starting is reported too, after 0.4 s
    finally:
        watchdog.stop()
    assert "start-up limit" in messages[0] and "0.4 s" in messages[0]
    assert float(messages[0].split("no progress for ")[1].split(" s")[0]) >= 0.4


def test_beats_keep_it_quiet():
    stalls: list[str] = []
    watchdog = StallWatchdog(0.5, on_stall=stalls.append)
    done = threading.Event()
    watchdog.start()
    try:
        for _ in range(40):  # 40 x 25 ms > the timeout, with a beat between each
            watchdog.beat()
            done.wait(0.025)
    finally:
        watchdog.stop()
    assert stalls == []


def test_serial_run_with_a_hung_env_ends_with_failure_naming_the_stuck_step(tmp_path):
    result = run_module(
        "sf_examples.train_faulty_env",
        [
            "--experiment=hang",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=100000",
            "--device=cpu",
            "--fault_step_error_prob=0",
            "--fault_reset_error_prob=0",
            "--fault_hang_after=200",
            "--heartbeat_timeout=3",
            "--decorrelate_experience_max_seconds=0",
            "--reset_timeout_seconds=60",
        ],  # fmt: skip
        timeout=120,
    )
    assert result.returncode == 1, result.explain()
    assert "Serial mode: the run made no progress for" in result.output, result.explain()
    assert "in step" in result.output and "train_faulty_env.py" in result.output  # the stack reaches the env
