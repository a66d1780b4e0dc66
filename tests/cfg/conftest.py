"""Fixtures shared by the configuration tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from sample_factory.utils.utils import log


class LogCapture(logging.Handler):
    """Collects records of the ``sf`` logger, which does not propagate, so pytest's caplog cannot see them."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, level: int = logging.DEBUG) -> list[str]:
        return [record.getMessage() for record in self.records if record.levelno >= level]

    def text(self, level: int = logging.DEBUG) -> str:
        return "\n".join(self.messages(level))


@pytest.fixture
def sf_log() -> Iterator[LogCapture]:
    handler = LogCapture()
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
