"""Keeping ViZDoom's engine processes, shared memory and temp files from outliving the env that made them.

Every ``DoomGame`` runs the engine in a child process and talks to it through ``/dev/shm/ViZDoom*<instance id>``
segments. ``game.close()`` removes both, but a crashed engine, a Python exception between ``init()`` and
``close()`` or an interpreter shutdown can skip it. Each started game is therefore registered here with its
instance id and engine pid; ``release_game`` (called by the envs' ``close()``) and an ``atexit`` hook make sure
the engine is gone and its segments are removed whatever happened.

Neither runs when the process is killed (SIGKILL) or leaves through ``os._exit``, and the orphaned engines would
live on. For that case each process that starts games also starts a tiny shell watchdog (before the first
``init()``: a networked host blocks in ``init()`` until its clients joined, and a crash then must not leave it
waiting forever): it waits for the process to disappear, then kills the engines listed in ``engines.txt`` of the
temp folder and every other engine whose command line names a config file in that folder (those still starting),
and removes their shared memory.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from sample_factory.utils.utils import log

SHM_DIR = "/dev/shm"
SHM_PREFIXES = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")
ENGINE_EXIT_WAIT_S = 2.0
PORT_RANGE = (20000, 50000)
PORT_STRIDE = 1000  # a busy port is skipped by this much, so the next try cannot land on another env's port


@dataclass
class GameRecord:
    """What is needed to clean up after a started game even if its Python object is unusable."""

    game: Any
    instance_id: str
    engine_pid: int | None


# An engine makes an (empty) ``_vizdoom`` scratch folder in the working directory when it finds none. Two engines
# starting at once can both find none: the second one's mkdir then fails ("Failed to create ./_vizdoom/ directory:
# File exists") and takes its rollout worker down with it (SIGSEGV). So the folder is made before any engine starts
# (``ensure_scratch_dir``), and only the process that made it removes it again, as it exits: never one that found it
# there (another process of the run, or the user's, may be starting an engine).
SCRATCH_DIR = "_vizdoom"
_scratch_made: tuple[int, str] | None = None  # (pid, absolute path) of the folder a process made (not its children)

_live_games: dict[int, GameRecord] = {}
_lock = threading.RLock()  # temp_dir() is also called with the lock held
_temp_dir: str | None = None
_run_base_port: int | None = None
_watchdog: subprocess.Popen | None = None
_watchdog_owner: int | None = None  # pid that started it: a forked child needs a watchdog of its own

# $1: pid to watch, $2: engine list ("pid instance_id" lines), $3: temp folder, $4: the engine's scratch folder to
# remove if empty (or nothing when this process did not make it). Signals sent to the whole process
# group (Ctrl+C, kill -TERM -pgid) are ignored: the watchdog must outlive the process it watches.
_WATCHDOG_SCRIPT = """
trap '' INT TERM HUP
while read -r _ _ _ ppid _ < /proc/$$/stat && [ "$ppid" = "$1" ]; do sleep 0.5; done
if [ -f "$2" ]; then
  while read -r pid id; do
    kill -9 "$pid" 2>/dev/null
    rm -f "/dev/shm/ViZDoomSM$id" "/dev/shm/ViZDoomMQCtr$id" "/dev/shm/ViZDoomMQDoom$id"
  done < "$2"
fi
for cmdline in /proc/[0-9]*/cmdline; do
  args=$(tr '\\0' ' ' < "$cmdline" 2>/dev/null) || continue
  case "$args" in *"-config $3/"*) ;; *) continue ;; esac
  pid=${cmdline#/proc/}; pid=${pid%/cmdline}
  kill -9 "$pid" 2>/dev/null
  id=${args#*+viz_instance_id }; id=${id%% *}
  [ -n "$id" ] && rm -f "/dev/shm/ViZDoomSM$id" "/dev/shm/ViZDoomMQCtr$id" "/dev/shm/ViZDoomMQDoom$id"
done
rm -rf "$3"
[ -n "$4" ] && rmdir "$4" 2>/dev/null
exit 0
"""


def temp_dir() -> str:
    """A private folder of this process for ViZDoom's .ini and generated bot files; removed at exit."""
    global _temp_dir
    with _lock:
        if _temp_dir is None or not os.path.isdir(_temp_dir):
            _temp_dir = tempfile.mkdtemp(prefix=f"sf_vizdoom_{os.getpid()}_")
    return _temp_dir


def _child_command_lines() -> list[tuple[int, list[bytes]]]:
    """(pid, argv) of every live child process of this process."""
    me = os.getpid()
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                children.append((int(entry), f.read().split(b"\0")))
        except (OSError, ValueError, IndexError):
            continue  # the process went away while we looked
    return children


def find_engine_pid(instance_id: str) -> int | None:
    """Pid of the engine child of this process whose command line carries ``+viz_instance_id <instance_id>``."""
    for pid, args in _child_command_lines():
        if instance_id.encode() in args:
            return pid
    return None


def engine_processes() -> set[int]:
    """Pids of the engines this process launched that still run, started or still starting (found by the config
    file in this process's temp folder that every engine is given)."""
    prefix = (temp_dir() + os.sep).encode()
    return {
        pid
        for pid, args in _child_command_lines()
        if any(a == b"-config" and b.startswith(prefix) for a, b in zip(args, args[1:], strict=False))
    }


def register_game(game: Any) -> GameRecord:
    """Remember a freshly initialised game so it is cleaned up even if nobody closes it."""
    instance_id = game.get_instance_id()
    record = GameRecord(game, instance_id, find_engine_pid(instance_id))
    with _lock:
        _live_games[id(game)] = record
        _write_engine_list()
    _ensure_watchdog()
    return record


def _engine_list_path() -> str:
    return os.path.join(temp_dir(), "engines.txt")


def _write_engine_list() -> None:
    """Rewrite the watchdog's list of live engines (called with ``_lock`` held); atomic through a rename."""
    path = _engine_list_path()
    lines = [f"{r.engine_pid} {r.instance_id}\n" for r in _live_games.values() if r.engine_pid is not None]
    with open(path + ".tmp", "w") as f:
        f.writelines(lines)
    os.replace(path + ".tmp", path)


def prepare_engine_start() -> None:
    """Call before ``game.init()``: the scratch folder and the watchdog must exist while an engine starts."""
    temp_dir()
    ensure_scratch_dir()
    _ensure_watchdog()


def ensure_scratch_dir() -> None:
    """Make the engine's scratch folder unless it exists; the process whose ``mkdir`` made it owns its removal."""
    global _scratch_made
    path = os.path.abspath(SCRATCH_DIR)
    with _lock:
        try:
            os.mkdir(path)
        except OSError:  # there already (made by another process), or an unwritable directory the engine reports
            return
        if made_scratch_dir() is None:  # the first one this process made is the one its watchdog knows
            _scratch_made = (os.getpid(), path)


def made_scratch_dir() -> str | None:
    """The scratch folder this process made (and removes as it exits), or None."""
    return _scratch_made[1] if _scratch_made is not None and _scratch_made[0] == os.getpid() else None


def _ensure_watchdog() -> None:
    """Start this process's watchdog once (again after a fork: the child has its own engines)."""
    with _lock:  # the players of a match start their engines from parallel threads
        if _watchdog is not None and _watchdog.poll() is None and _watchdog_owner == os.getpid():
            return
        _start_watchdog()


def _start_watchdog() -> None:
    global _watchdog, _watchdog_owner
    _watchdog = subprocess.Popen(
        [
            "/bin/sh",
            "-c",
            _WATCHDOG_SCRIPT,
            "sf_vizdoom_watchdog",
            str(os.getpid()),
            _engine_list_path(),
            temp_dir(),
            made_scratch_dir() or "",
        ],  # fmt: skip
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _watchdog_owner = os.getpid()


def release_game(game: Any) -> None:
    """Close ``game``; then make sure its engine process and shared memory are gone (registered or not)."""
    with _lock:
        record = _live_games.pop(id(game), None)
        if record is not None and _temp_dir is not None and os.path.isdir(_temp_dir):
            _write_engine_list()
    try:
        game.close()
    except Exception as exc:  # an engine that already died makes close() raise; cleanup below still runs
        log.debug("DoomGame.close() failed: %r", exc)
    if record is not None:
        _reap_engine(record.engine_pid)
        remove_shared_memory(record.instance_id)


def remove_scratch_dir() -> None:
    """At exit: remove the engine's ``_vizdoom`` folder if this process made it and it is empty."""
    path = made_scratch_dir()
    if path is None:
        return
    try:
        os.rmdir(path)  # fails, harmlessly, while it holds anything
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our zombie child
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def _reap_engine(pid: int | None) -> None:
    """Wait briefly for the engine to exit after close(); kill it if it does not (it ignores SIGTERM when stuck)."""
    if pid is None:
        return
    deadline = time.monotonic() + ENGINE_EXIT_WAIT_S
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.02)
    log.warning("ViZDoom engine %d did not exit after close(), killing it", pid)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def remove_shared_memory(instance_id: str) -> list[str]:
    """Delete the ``/dev/shm`` segments of one instance (left behind when an engine crashes); returns the names."""
    removed = []
    for prefix in SHM_PREFIXES:
        path = os.path.join(SHM_DIR, f"{prefix}{instance_id}")
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


def close_all_games() -> None:
    """atexit hook: release every game still registered, then remove the temp folder."""
    with _lock:
        games = [record.game for record in _live_games.values()]
    for game in games:
        release_game(game)
    remove_scratch_dir()
    if _temp_dir is not None:
        shutil.rmtree(_temp_dir, ignore_errors=True)


atexit.register(close_all_games)


def live_game_count() -> int:
    """How many games are started and not yet released (tests check this drops to zero)."""
    with _lock:
        return len(_live_games)


# ---- networking ports --------------------------------------------------------------------------------------------


def run_base_port() -> int:
    """A base port drawn once per process, for envs created without ``--doom_base_port`` (e.g. in tests)."""
    global _run_base_port
    if _run_base_port is None:
        _run_base_port = random.SystemRandom().randrange(PORT_RANGE[0], PORT_RANGE[1] - 10 * PORT_STRIDE)
    return _run_base_port


def draw_base_port() -> int:
    """A fresh random base port for one training run (stored in ``cfg.doom_base_port``)."""
    return random.SystemRandom().randrange(PORT_RANGE[0], PORT_RANGE[1] - 10 * PORT_STRIDE)


def port_is_free(port: int) -> bool:
    """True when nothing is bound to ``port`` on loopback (ViZDoom's netcode uses UDP; TCP checked too)."""
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def pick_port(base_port: int, env_id: int, attempt: int = 0, max_tries: int = 20) -> int:
    """``base_port + env_id`` (unique within a run), moved by ``PORT_STRIDE`` steps while the port is taken."""
    span = PORT_RANGE[1] - PORT_RANGE[0]
    for step in range(attempt, attempt + max_tries):
        port = PORT_RANGE[0] + (base_port - PORT_RANGE[0] + max(env_id, 0) + step * PORT_STRIDE) % span
        if port_is_free(port):
            return port
    raise RuntimeError(f"no free UDP port found for env_id={env_id} starting at base port {base_port}")
