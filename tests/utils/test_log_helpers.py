"""Logging helpers of ``sample_factory.utils.utils``: the experiment's log file from a config, rate-limited lines."""

from __future__ import annotations

import io
import logging
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path

import pytest

from sample_factory.utils.logging_setup import close_file_logger, make_console_handler
from sample_factory.utils.utils import debug_log_every_n, has_file_handler, init_file_logger, log, log_every_n


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = make_console_handler(stream)
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    yield stream
    log.removeHandler(handler)
    log.setLevel(level)


def test_init_file_logger_from_a_config(tmp_path: Path) -> None:
    cfg = Namespace(train_dir=str(tmp_path), experiment="exp")
    close_file_logger()
    assert not has_file_handler(), log.handlers
    try:
        init_file_logger(cfg)
        assert has_file_handler()
        log.info("into the experiment's file")
    finally:
        close_file_logger()
    assert not has_file_handler()
    assert "into the experiment's file" in (tmp_path / "exp" / "sf_log.txt").read_text()


def test_log_every_n_logs_the_first_call_then_every_nth(captured: io.StringIO) -> None:
    for i in range(7):
        log_every_n(3, logging.INFO, "tick %d", i)
    assert [line.split("] ")[-1] for line in captured.getvalue().splitlines()] == ["tick 0", "tick 3", "tick 6"]


def test_log_every_n_level_and_separate_counters(captured: io.StringIO) -> None:
    log_every_n(2, "WARNING", "w-line", key="test-w")
    log_every_n(2, "WARNING", "w-line", key="test-w")
    debug_log_every_n(1, "d-line %s", "x", key="test-d")
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2 and "WARNING: w-line" in lines[0] and lines[1].endswith("d-line x")
    with pytest.raises(ValueError, match="at least 1"):
        log_every_n(0, logging.INFO, "never")
