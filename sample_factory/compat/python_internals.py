"""CPython's private ``atexit._run_exitfuncs``: run the exit handlers now, before ending a process with ``os._exit``.

Two places end a process without the interpreter's normal teardown, each for a measured reason: a finished
command (``utils.processes.exit_process``: Python's clearing of every module costs about 0.45 s of CPU once torch
is imported) and a worker forked from the fork server (multiprocessing ends it with ``os._exit``). Both still owe the
user's code its ``atexit`` handlers (log files closed, temporary folders removed), which only this private function
runs without exiting. Verified on CPython 3.10-3.13 (``VERIFIED_PYTHON``); elsewhere, or with
``SF_DISABLE_FAST_PATHS=all``, :func:`run_exit_handlers` returns False and the caller takes the public path.
"""

from __future__ import annotations

import atexit
import platform
import sys

from sample_factory.compat import disabled

VERIFIED_PYTHON = ((3, 10), (3, 11), (3, 12), (3, 13))


def exit_handlers_runnable() -> bool:
    """This interpreter is one the private call was verified on, and it is not switched off."""
    return (
        not disabled("python_internals")
        and platform.python_implementation() == "CPython"
        and sys.version_info[:2] in VERIFIED_PYTHON
        and callable(getattr(atexit, "_run_exitfuncs", None))
    )


def run_exit_handlers() -> bool:
    """Run (and so forget) every handler registered with ``atexit``; False, doing nothing, where that is not
    verified: the caller must then exit through ``sys.exit``, which runs them."""
    if not exit_handlers_runnable():
        return False
    atexit._run_exitfuncs()
    return True
