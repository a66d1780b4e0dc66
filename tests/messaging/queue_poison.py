"""Poison faster-fifo queues the way a SIGKILL inside ``put`` does, deterministically (used by the queue repair tests).

``poison(queues, half_written)`` starts a process that takes each queue's lock (the mutex faster-fifo takes in put
and get), optionally leaves a half-written message in the last one (its length written and counted, its body not:
what a put killed between the two leaves), and SIGKILLs itself while holding them. It returns once that process is
dead, so the queues are then locked by a thread that no longer exists.

Run as a script it is a CartPole training run whose runner's inbox and ``rollout_w0``'s inbox are poisoned so after
``runner.init()`` (children starting) and before ``runner.run()``; it prints how many queues the runner repaired.
With ``--live_holder`` the runner's inbox is instead locked by a live process, which no repair may touch.
With ``--die_holding_inbox_on_usr1`` nothing is poisoned at start; on SIGUSR1 the runner takes its own inbox's lock
and SIGKILLs itself: a runner killed while reading its inbox, which leaves its children to clean up alone.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import struct
import sys
import threading

from sample_factory.compat.faster_fifo_internals import HEADER, MUTEX_OFFSET, RING_STATE_OFFSET

PR_SET_PDEATHSIG = 1
ORPHAN_LENGTH = 1234  # the length a killed put wrote before it could write the message


def _take_locks(queues: list) -> None:
    libc = ctypes.CDLL(None)
    for q in queues:
        assert libc.pthread_mutex_lock(ctypes.c_void_p(ctypes.addressof(q.queue_obj_buffer) + MUTEX_OFFSET)) == 0


def hold_until_killed(queues: list, holding) -> None:
    """Take the locks of ``queues``, set the event ``holding`` and wait to be killed (a live holder); dies with its
    parent."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _take_locks(queues)
    holding.set()
    threading.Event().wait()


def _hold_and_die(queues: list, half_written: bool) -> None:
    _take_locks(queues)
    if half_written:
        q = queues[-1]
        capacity, _, head, tail, used, count = HEADER.unpack_from(q.queue_obj_buffer, 0)
        ring = memoryview(q.shared_memory).cast("B")
        for i, byte in enumerate(struct.pack("<Q", ORPHAN_LENGTH)):
            ring[(tail + i) % capacity] = byte
        struct.pack_into("<4Q", q.queue_obj_buffer, RING_STATE_OFFSET, head, (tail + 8) % capacity, used + 8, count)
    os.kill(os.getpid(), signal.SIGKILL)


def poison(queues: list, half_written: bool = False) -> int:
    """Leave ``queues`` locked by a dead process (see the module docstring); returns that process's pid."""
    proc = multiprocessing.get_context("spawn").Process(target=_hold_and_die, args=(queues, half_written))
    proc.start()
    proc.join()
    assert proc.exitcode == -signal.SIGKILL, proc.exitcode
    return proc.pid


def main() -> int:
    from sample_factory.train import make_runner
    from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

    live_holder = "--live_holder" in sys.argv
    die_on_usr1 = "--die_holding_inbox_on_usr1" in sys.argv
    flags = ("--live_holder", "--die_holding_inbox_on_usr1")
    cfg = parse_gym_args([a for a in sys.argv[1:] if a not in flags])
    register_env_from_cfg(cfg)
    cfg, runner = make_runner(cfg)
    status = runner.init()
    if status != 0:
        return status
    if live_holder:  # nothing can repair this: the runner's stall watchdog must end the run
        ctx = multiprocessing.get_context("spawn")
        holding = ctx.Event()
        ctx.Process(target=hold_until_killed, args=([runner.processes.inboxes["runner"]], holding), daemon=True).start()
        assert holding.wait(60)
        print("the runner's inbox is locked by a live process", flush=True)
        return runner.run()
    if die_on_usr1:
        inbox = runner.processes.inboxes["runner"]

        def die_holding_inbox(*_) -> None:
            _take_locks([inbox])
            os.kill(os.getpid(), signal.SIGKILL)

        signal.signal(signal.SIGUSR1, die_holding_inbox)
        return runner.run()
    pid = poison([runner.processes.inboxes["runner"], runner.processes.inboxes["rollout_w0"]], half_written=True)
    print(f"poisoned the inboxes of runner and rollout_w0: locked by dead process {pid}", flush=True)
    status = runner.run()
    print(f"queue repairs: {runner.processes.queue_doctor.repairs}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
