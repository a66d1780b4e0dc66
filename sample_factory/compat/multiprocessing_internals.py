"""multiprocessing's private fork-server state: a fork server made by forking the runner itself, so it starts with
torch and the package already imported.

Private names used: ``multiprocessing.forkserver._forkserver`` and its ``_lock``, ``_forkserver_address``,
``_forkserver_alive_fd``, ``_forkserver_pid``; ``atexit._clear``; ``sys.modules`` entries of the user's modules.
Verified on CPython 3.10-3.12 (``VERIFIED_PYTHON``); elsewhere, or with ``SF_DISABLE_FAST_PATHS=all``, the caller
starts Python's own fork server (:func:`fork_blocker` says why, and the caller logs it).

Python's fork server is a new interpreter that imports its preload list (torch and the workers' modules: about
1.5 s of CPU, on the critical path of a run's start-up, since the first worker can start only when the server is
ready). The runner has imported all of that already; a copy of it made with ``fork()`` right after parsing is a
ready server at once. What the workers see must not change, so the copy first becomes what the new interpreter
would have been:

- modules that are neither the standard library, nor installed packages (the interpreter's site directories),
  nor this package (the user's script and its own modules, the examples) are dropped, and ``__main__`` is replaced
  by an empty module: every worker then imports the user's main module again as ``__mp_main__``, and anything it
  imports, fresh from the files, exactly as with a new interpreter. The unit is a top-level package, and one that
  a staying module holds (``import gymnasium as gym`` in this package, with gymnasium installed into a folder on
  ``PYTHONPATH``) stays too: otherwise the staying module would make objects of the old copy while the workers
  unpickle the new one's, and a space of one is no instance of the other's classes;
- handlers registered with ``atexit`` are forgotten (workers run those that their own code registers) and signal
  handlers of Python code go back to the defaults, except that the server ignores SIGTERM (see ``_serve``).

It is used only where forking is known to be safe (:func:`fork_blocker`): no Python thread but this one, no native
thread started since the package was imported (a simulator's threads, torch's intra-op pool), no CUDA initialised
and no GPU in the run, no process group of a distributed run (its sockets would outlive their rank in the server),
and the interpreter's fork server laid out as this module expects (CPython 3.10-3.12). A process that entered an
OpenMP parallel region before it imported this package would hand its children a thread pool that hangs them on
their first parallel torch operation; a probe (a throw-away fork that runs one, within a second) rules that out
before every fork. Anywhere else the caller starts the usual server.

A forked server belongs to one run: :func:`stop_forked_server` ends it when the run's workers are gone, so the next
run in the same process (a test suite, a notebook) forks a fresh copy instead of reusing an old one.
"""

from __future__ import annotations

import atexit
import inspect
import os
import signal
import site
import socket
import sys
import sysconfig
import threading
import time
import types

# the native threads of this process once torch and numpy were imported (their thread pools are fork-safe): more
# threads later means something started one that a forked child would inherit in an unknown state
import torch  # noqa: F401  (imported for its threads, counted below)

from sample_factory.compat import disabled

VERIFIED_PYTHON = ((3, 10), (3, 11), (3, 12))
_EXPECTED_MAIN_PARAMS = ("listener_fd", "alive_r", "preload", "main_path", "sys_path")
_STOP_WAIT_S = 5.0
_PROBE_WAIT_S = 1.0
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def native_thread_count() -> int:
    """Threads of this process as the kernel sees them (Python's and native ones); 0 where that cannot be read."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


_THREADS_AT_IMPORT = native_thread_count()
_forked_pid: int | None = None  # the server this process forked and has not stopped yet
_probe_passed: bool | None = None


def fork_blocker(uses_cuda: bool, distributed: bool) -> str | None:
    """Why the fork server must not be forked from this process now, or None when it may."""
    from multiprocessing import forkserver

    switch = disabled("multiprocessing_internals")
    if switch:
        return switch
    if sys.version_info[:2] not in VERIFIED_PYTHON:
        return f"forking the server is verified on Python 3.10-3.12, not on {sys.version.split()[0]}"
    params = tuple(inspect.signature(forkserver.main).parameters)
    server = getattr(forkserver, "_forkserver", None)
    if params != _EXPECTED_MAIN_PARAMS or not hasattr(server, "_forkserver_alive_fd"):
        return f"this Python's fork server ({sys.version.split()[0]}) is not one this package knows how to fork"
    if uses_cuda or torch.cuda.is_initialized():
        return "the run uses CUDA, which a forked process cannot use"
    if distributed:
        return "a distributed run's connections must not outlive their rank"
    if threading.active_count() > 1:
        return f"{threading.active_count()} Python threads run in this process"
    if _THREADS_AT_IMPORT == 0 or native_thread_count() > _THREADS_AT_IMPORT:
        return "threads were started in this process since torch was imported"
    if not _children_can_compute():
        return "a forked child of this process cannot run a parallel torch operation (an OpenMP pool in use)"
    return None


def _children_can_compute() -> bool:
    """Whether a forked child runs a multi-threaded torch operation to the end.

    Checked before every fork (a run in this process may have started a pool since), except once it failed: a
    pool, once started, stays.
    """
    global _probe_passed
    if _probe_passed is not False:
        pid = os.fork()
        if pid == 0:  # the probe: one parallel reduction (more elements than torch's grain size), then leave
            code = 1
            try:
                torch.set_num_threads(2)
                torch.ones(1 << 18).sum()
                code = 0
            finally:
                os._exit(code)
        _probe_passed = _reap(pid, _PROBE_WAIT_S) == 0
    return _probe_passed


def start_forked_server() -> None:
    """Fork this process into the multiprocessing fork server (``multiprocessing.forkserver``'s own loop)."""
    global _forked_pid
    from multiprocessing import connection, forkserver, resource_tracker, util

    server = forkserver._forkserver
    with server._lock:
        resource_tracker.ensure_running()  # its pipe is handed to every worker: it must exist before the copy
        listener = socket.socket(socket.AF_UNIX)
        with listener:
            address = connection.arbitrary_address("AF_UNIX")
            listener.bind(address)
            if not util.is_abstract_socket_namespace(address):
                os.chmod(address, 0o600)
            listener.listen()
            alive_r, alive_w = os.pipe()  # the server ends when every holder of alive_w (us, the workers) is gone
            pid = os.fork()
            if pid == 0:
                _serve(listener.fileno(), alive_r, alive_w)  # never returns
            os.close(alive_r)
        server._forkserver_address = address
        server._forkserver_alive_fd = alive_w
        server._forkserver_pid = _forked_pid = pid


def _serve(listener_fd: int, alive_r: int, alive_w: int) -> None:
    """The server's side of the fork: become a clean server, run the standard loop, never return to the caller."""
    from multiprocessing import forkserver

    code = 0
    try:
        os.close(alive_w)
        forkserver._forkserver._lock = threading.Lock()  # copied while the runner held it
        _forget_user_state()
        # ended by the runner alone (stop_forked_server, or EOF on alive_r once it is gone): a SIGTERM sent to the
        # run's process group (a launcher, Slurm) must not end it while the runner still starts workers; those
        # ignore SIGTERM from their first step anyway (child_process)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        forkserver.main(listener_fd, alive_r, [], main_path=None, sys_path=None)
    except SystemExit:  # the standard loop's way of ending when the runner and its workers are gone
        pass
    except BaseException:  # noqa: BLE001  (reported, then the process ends whatever happened)
        code = 1
        sys.excepthook(*sys.exc_info())
    finally:
        os._exit(code)


def _forget_user_state() -> None:
    """What a new interpreter would not have: the user's modules, ``__main__``, exit and signal handlers."""
    for name in user_module_names():
        del sys.modules[name]
    sys.modules["__main__"] = types.ModuleType("__main__")
    atexit._clear()
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if callable(handler) and handler is not signal.default_int_handler:
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


_MAIN_MODULES = frozenset({"__main__", "__mp_main__"})


def user_module_names() -> list[str]:
    """The modules of ``sys.modules`` that the server drops so that workers import them afresh.

    Decided per top-level package, from the file of its top module (submodules such as ``torch.ops`` have no
    real file of their own): the user's, unless a staying module holds it (see the module docstring). The main
    module is always the user's.
    """
    modules = dict(sys.modules)
    by_top: dict[str, list[str]] = {}
    for name in modules:
        by_top.setdefault(name.partition(".")[0], []).append(name)
    library_dirs = _library_dirs()
    user = {top for top in by_top if top in _MAIN_MODULES or not _is_library_module(modules.get(top), library_dirs)}
    user -= _held_by_staying_modules(modules, by_top, user)
    return [name for top in user for name in by_top[top]]


def _held_by_staying_modules(modules: dict[str, object], by_top: dict[str, list[str]], user: set[str]) -> set[str]:
    """The top-level packages of ``user`` whose modules, classes or functions a staying module's globals hold, and
    those that these hold in turn."""
    candidates = user - _MAIN_MODULES
    held: set[str] = set()
    pending = [top for top in by_top if top not in user]
    while pending and candidates:
        for name in by_top[pending.pop()]:
            namespace = getattr(modules[name], "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for value in list(namespace.values()):
                owner = _defining_package(value)
                if owner in candidates:
                    candidates.discard(owner)
                    held.add(owner)
                    pending.append(owner)
    return held


def _defining_package(value: object) -> str | None:
    """The top-level package that defines ``value`` when it is a module, class or function; None otherwise.

    Looks at ``type(value)`` only, so that no attribute hook of an arbitrary object runs.
    """
    kind = type(value)
    if kind is types.ModuleType:
        name = value.__name__
    elif issubclass(kind, type) or kind in (types.FunctionType, types.BuiltinFunctionType):
        name = getattr(value, "__module__", None)
    else:
        return None
    return name.partition(".")[0] if isinstance(name, str) else None


def _library_dirs() -> tuple[str, ...]:
    """The standard library, the site directories of packages and this package, as given and with links resolved."""
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths} | {_PACKAGE_DIR}
    dirs |= set(getattr(site, "getsitepackages", list)())  # a venv's base interpreter's, Debian's dist-packages
    if site.ENABLE_USER_SITE and site.USER_SITE:
        dirs.add(site.USER_SITE)
    return tuple({form(d) + os.sep for d in dirs for form in (os.path.abspath, os.path.realpath)})


def _is_library_module(module: object, library_dirs: tuple[str, ...]) -> bool:
    """True for the standard library, installed packages, this package and built-in modules; False for the rest."""
    if getattr(module, "__name__", "") == "__main__":
        return False
    path = getattr(module, "__file__", None)
    if path is None:
        return True  # built-in, frozen, or a namespace package with no file of its own
    return os.path.abspath(path).startswith(library_dirs)


def usual_server_running() -> bool:
    """Python's own fork server (a new interpreter) was started by an earlier run of this process."""
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None) is not None


def stop_forked_server() -> None:
    """End the server this process forked (if any) and reap it; the next run forks a new one."""
    global _forked_pid
    from multiprocessing import forkserver, util

    server = forkserver._forkserver
    with server._lock:
        if _forked_pid is None or server._forkserver_pid != _forked_pid:
            _forked_pid = None
            return
        os.close(server._forkserver_alive_fd)  # the server sees EOF once no worker holds the pipe either
        _reap(_forked_pid, _STOP_WAIT_S)  # killed if a stray worker keeps it waiting
        address = server._forkserver_address
        if address and not util.is_abstract_socket_namespace(address):
            try:
                os.unlink(address)
            except OSError:
                pass
        server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None
        _forked_pid = None


def _reap(pid: int, wait_s: float) -> int | None:
    """The exit status of child ``pid`` if it leaves within ``wait_s``; else None, once it was killed and reaped.

    A bounded wait: ``os.waitpid`` has no timeout, so the child is polled every millisecond.
    """
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.001)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None
