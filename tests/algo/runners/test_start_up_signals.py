"""SIGINT/SIGTERM during a run's start-up: held, then an orderly stop; a second one acts at once.

Why they are held: a SIGTERM's default action, killing the runner while torch names a shared-memory block and before
it removes the name, leaves a file in /dev/shm (``start_up_signals``). A launcher's Ctrl+C test caught one.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest
from sf_run import run_script

from sample_factory.algo.runners.start_up_signals import StopSignalsHeld

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "signal_at_start_train.py")
INTERRUPTED = 2


@pytest.fixture
def previous_handler():
    """A recording SIGTERM handler standing for whatever the caller had installed; the original comes back after."""
    calls: list[int] = []
    original = signal.signal(signal.SIGTERM, lambda signum, _frame: calls.append(signum))
    yield calls
    signal.signal(signal.SIGTERM, original)


def test_a_signal_is_held_and_handed_over(previous_handler) -> None:
    mine = lambda signum, _frame: None  # noqa: E731  (the runner's handler, installed before the hand-over)
    with StopSignalsHeld() as held:
        signal.raise_signal(signal.SIGTERM)
        assert held.received == [signal.SIGTERM] and previous_handler == []
        signal.signal(signal.SIGTERM, mine)
        assert held.hand_over() == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is mine  # the runner's handlers stay
    assert previous_handler == []  # handed over: not delivered again


def test_without_hand_over_the_previous_handler_gets_the_held_signal(previous_handler) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(ValueError, match="start-up failed"):
        with StopSignalsHeld():
            signal.raise_signal(signal.SIGTERM)
            assert previous_handler == []
            raise ValueError("start-up failed")
    assert previous_handler == [signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_second_signal_goes_to_the_previous_handler_at_once(previous_handler) -> None:
    with StopSignalsHeld() as held:
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
        assert previous_handler == [signal.SIGTERM]
        assert held.received == []
    assert previous_handler == [signal.SIGTERM]  # once, not again at the end


def test_off_the_main_thread_nothing_is_held(previous_handler) -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen = []

    def start_up() -> None:
        with StopSignalsHeld() as held:
            seen.append((signal.getsignal(signal.SIGTERM), held.hand_over()))

    thread = threading.Thread(target=start_up)
    thread.start()
    thread.join()
    assert seen == [(before, [])]


CARTPOLE = ["--env=CartPole-v1", "--device=cpu", "--num_workers=2", "--num_envs_per_worker=2"]


@pytest.mark.parametrize("serial", [False, True], ids=["parallel", "serial"])
def test_sigterm_while_starting_stops_the_run_in_order(tmp_path: Path, serial: bool) -> None:
    """The run starts all the same, then stops with INTERRUPTED; nothing is left in /dev/shm (``run_script``)."""
    args = [*CARTPOLE, f"--serial_mode={serial}", f"--train_dir={tmp_path}", "--experiment=held"]
    result = run_script(SCRIPT, args, timeout=120)
    assert result.returncode == INTERRUPTED, result.explain()
    assert "Received SIGTERM while starting" in result.output
    assert "on_init returned" in result.output
    assert "Received SIGTERM: stopping, saving checkpoints" in result.output


def test_a_second_sigterm_while_starting_ends_the_process_at_once(tmp_path: Path) -> None:
    args = [*CARTPOLE, f"--train_dir={tmp_path}", "--experiment=twice", "--signal_count=2"]
    result = run_script(SCRIPT, args, timeout=120)
    assert result.returncode == -signal.SIGTERM, result.explain()
    assert "on_init returned" not in result.output


def test_sigterm_to_the_process_group_before_the_workers_start(tmp_path: Path) -> None:
    """The fork server already runs and gets the signal too: it ignores it, so the workers still start."""
    args = [*CARTPOLE, f"--train_dir={tmp_path}", "--experiment=group", "--signal_hook=on_connect_components",
            "--signal_group=True"]  # fmt: skip
    result = run_script(SCRIPT, args, timeout=120)
    assert result.returncode == INTERRUPTED, result.explain()
    assert "on_connect_components returned" in result.output
    assert "Traceback" not in result.output
