"""Each compat module applies its private-API path only on the versions it was verified on, and never with
``SF_DISABLE_FAST_PATHS=all``; elsewhere the public path is taken and the reason can be logged."""

from __future__ import annotations

import atexit
import subprocess
import sys

import pytest

from sample_factory.compat import faster_fifo_internals, glibc_internals, multiprocessing_internals, python_internals
from sample_factory.model.fast_path_checks import DISABLE_ENV, switched


@pytest.fixture
def all_off(monkeypatch):
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "all")


def test_everything_is_off_with_the_switch(all_off):
    assert multiprocessing_internals.fork_blocker(False, False) == "SF_DISABLE_FAST_PATHS=all"
    assert faster_fifo_internals.repair_unavailable() == "SF_DISABLE_FAST_PATHS=all"
    assert glibc_internals.why_not_applied() == "SF_DISABLE_FAST_PATHS=all"
    assert glibc_internals.reuse_freed_memory_for_large_tensors() is False
    calls = []
    atexit.register(calls.append, 1)
    try:
        assert python_internals.run_exit_handlers() is False and calls == []
    finally:
        atexit.unregister(calls.append)


def test_each_module_has_its_own_switch(monkeypatch):
    """``SF_DISABLE_FAST_PATHS=<module>`` turns off that module's private paths and no other's (to measure each)."""
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "glibc_internals, python_internals")
    assert glibc_internals.why_not_applied() == "SF_DISABLE_FAST_PATHS=glibc_internals"
    assert python_internals.exit_handlers_runnable() is False
    assert faster_fifo_internals.repair_unavailable() is None
    assert multiprocessing_internals.fork_blocker(False, False) != "SF_DISABLE_FAST_PATHS=multiprocessing_internals"
    assert switched(DISABLE_ENV) == frozenset()  # the model's fast paths stay on
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "multiprocessing_internals,faster_fifo_internals")
    assert multiprocessing_internals.fork_blocker(False, False) == "SF_DISABLE_FAST_PATHS=multiprocessing_internals"
    assert faster_fifo_internals.repair_unavailable() == "SF_DISABLE_FAST_PATHS=faster_fifo_internals"
    monkeypatch.setenv("SF_DISABLE_FAST_PATHS", "glibc")
    with pytest.raises(ValueError, match="glibc_internals"):  # an unknown name lists the known ones
        switched(DISABLE_ENV)


def test_an_unverified_version_takes_the_public_path(monkeypatch):
    monkeypatch.delenv("SF_DISABLE_FAST_PATHS", raising=False)
    monkeypatch.setattr(multiprocessing_internals, "VERIFIED_PYTHON", ((2, 7),))
    assert "verified on Python" in multiprocessing_internals.fork_blocker(False, False)
    monkeypatch.setattr(faster_fifo_internals, "VERIFIED_FASTER_FIFO", ("0.0.1",))
    assert "not a version the repair was verified on" in faster_fifo_internals.repair_unavailable()
    monkeypatch.setattr(glibc_internals, "VERIFIED_GLIBC", ((1, 0), (1, 1)))
    assert "outside the verified" in glibc_internals.why_not_applied()
    monkeypatch.setattr(python_internals, "VERIFIED_PYTHON", ((2, 7),))
    assert python_internals.exit_handlers_runnable() is False


def test_the_verified_versions_include_this_machine(monkeypatch):
    """The versions this suite runs on are verified ones, so the fast paths are what the suite tests."""
    monkeypatch.delenv("SF_DISABLE_FAST_PATHS", raising=False)
    assert faster_fifo_internals.repair_unavailable() is None
    assert glibc_internals.why_not_applied() is None
    assert python_internals.exit_handlers_runnable()


def test_exit_process_runs_the_handlers_on_both_paths(tmp_path):
    """A finished command's atexit handlers run whether the private call or the public exit ends it."""
    script = (
        "import atexit, sys\n"
        "from sample_factory.utils.processes import exit_process\n"
        f"atexit.register(lambda: open({str(tmp_path / 'ran')!r}, 'a').write('x'))\n"
        "exit_process(3)\n"
    )
    for env_switch in ("", "all"):
        env = {"SF_DISABLE_FAST_PATHS": env_switch, "PATH": "/usr/bin:/bin"}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
        assert result.returncode == 3, result.stderr
    assert (tmp_path / "ran").read_text() == "xx"
