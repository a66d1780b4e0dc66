"""The package logger: line format, colour only on terminals, sf_log.txt, levels, fresh processes."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sample_factory.utils import logging_setup
from sample_factory.utils.logging_setup import (
    LOG_FILE_NAME,
    close_file_logger,
    init_file_logger,
    log,
    make_console_handler,
    set_log_level,
)

LINE = re.compile(r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\]\[\d{5,}\] ")
ANSI = "\033["
REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore_logger() -> Iterator[None]:
    """Tests add handlers and change the level of the shared logger; put everything back."""
    handlers, level = list(log.handlers), log.level
    yield
    close_file_logger()
    for handler in list(log.handlers):
        if handler not in handlers:
            log.removeHandler(handler)
    log.setLevel(level)


def _capture(stream: io.StringIO) -> logging.Handler:
    handler = make_console_handler(stream)
    log.addHandler(handler)
    return handler


def test_logger_name_and_default_level() -> None:
    assert log.name == "sf"
    assert log is logging.getLogger("sf")
    if not os.environ.get("SF_LOG_LEVEL"):
        assert log.level == logging.INFO


def test_plain_console_has_prefix_and_no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = io.StringIO()
    _capture(stream)
    log.info("Fps is %d", 123)
    log.warning("slow env")
    info_line, warning_line = stream.getvalue().splitlines()
    assert LINE.match(info_line) and info_line.endswith(f"[{os.getpid():05d}] Fps is 123")
    assert LINE.match(warning_line) and warning_line.endswith("] WARNING: slow env")
    assert ANSI not in stream.getvalue()


def test_terminal_console_colours_by_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    stream = FakeTerminal()
    _capture(stream)
    log.warning("careful")
    log.error("broken")
    warning_line, error_line = stream.getvalue().splitlines()
    assert warning_line.startswith("\033[33m[") and warning_line.endswith("careful\033[0m")
    assert error_line.startswith("\033[31m[")


def test_no_color_env_disables_colour_on_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    stream = FakeTerminal()
    _capture(stream)
    log.error("broken")
    assert ANSI not in stream.getvalue()


def test_file_logger_writes_plain_sf_log_txt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    _capture(FakeTerminal())  # a colouring console alongside must not leak codes into the file
    experiment = tmp_path / "train_dir" / "exp"
    init_file_logger(str(experiment))
    init_file_logger(str(experiment))  # idempotent: still one file handler
    log.info("Collected {0: 1000}, FPS: 500.0")
    log.error("bad thing")
    for handler in log.handlers:
        handler.flush()
    lines = (experiment / LOG_FILE_NAME).read_text().splitlines()
    assert len(lines) == 2
    assert LINE.match(lines[0]) and lines[0].endswith("Collected {0: 1000}, FPS: 500.0")
    assert lines[1].endswith("ERROR: bad thing")
    assert ANSI not in "".join(lines)


def test_file_logger_moves_to_a_new_experiment(tmp_path: Path) -> None:
    init_file_logger(str(tmp_path / "first"))
    log.info("one")
    init_file_logger(str(tmp_path / "second"))
    log.info("two")
    close_file_logger()
    log.info("three")
    first = (tmp_path / "first" / LOG_FILE_NAME).read_text()
    second = (tmp_path / "second" / LOG_FILE_NAME).read_text()
    assert "one" in first and "two" not in first
    assert "two" in second and "one" not in second and "three" not in second


def test_set_log_level_accepts_names_and_numbers() -> None:
    set_log_level("debug")
    assert log.level == logging.DEBUG
    set_log_level(logging.ERROR)
    assert log.level == logging.ERROR
    set_log_level("20")
    assert log.level == logging.INFO
    with pytest.raises(ValueError, match="DEBUG, INFO"):
        set_log_level("chatty")


def test_level_filters_output() -> None:
    stream = io.StringIO()
    _capture(stream)
    set_log_level("WARNING")
    log.info("hidden")
    log.warning("shown")
    assert "hidden" not in stream.getvalue() and "shown" in stream.getvalue()


def test_console_handler_added_once_per_process() -> None:
    logging_setup._configure_process()
    names = [handler.get_name() for handler in log.handlers]
    assert names.count("sf_console") == 1
    assert log.propagate is False


def _run_fresh_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **env}
    full_env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=60, check=True
    )


def test_fresh_process_configures_itself_and_reads_env_level() -> None:
    """A spawned worker only imports the module: that alone must give it a working, levelled logger."""
    code = "from sample_factory.utils.logging_setup import log; log.debug('dbg'); log.info('hi')"
    result = _run_fresh_python(code, SF_LOG_LEVEL="DEBUG")
    lines = result.stderr.splitlines()  # stderr is a pipe here: plain text expected
    assert [line.split("] ", 1)[1] for line in lines] == ["dbg", "hi"]
    assert all(LINE.match(line) for line in lines)
    assert ANSI not in result.stderr


def test_invalid_env_level_warns_and_falls_back_to_info() -> None:
    code = "from sample_factory.utils.logging_setup import log; log.debug('dbg'); log.info('hi')"
    result = _run_fresh_python(code, SF_LOG_LEVEL="loud")
    assert "WARNING: Ignoring SF_LOG_LEVEL=loud" in result.stderr
    assert "dbg" not in result.stderr and result.stderr.rstrip().endswith("] hi")
