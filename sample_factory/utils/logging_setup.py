"""The package logger ``log`` (named ``"sf"``), its console handler and the per-experiment ``sf_log.txt``.

Every process, including spawned children that re-import this module, configures its own console handler
once at import. Lines look like ``[2024-05-01 12:00:00,123][01234] message``; the console colours them by
level only when it is a terminal, so redirected output and the log file never carry escape codes.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from sample_factory.utils import paths

if TYPE_CHECKING:  # the alias pulls in gymnasium, which every process would then import with the logger
    from sample_factory.utils.typing import Config

__all__ = [
    "log",
    "LOG_FILE_NAME",
    "init_file_logger",
    "close_file_logger",
    "init_experiment_file_logger",
    "has_file_handler",
    "log_every_n",
    "debug_log_every_n",
    "set_log_level",
    "make_console_handler",
    "PlainFormatter",
    "ColorFormatter",
]

LOGGER_NAME = "sf"
LOG_FILE_NAME = "sf_log.txt"
LOG_LEVEL_ENV_VAR = "SF_LOG_LEVEL"

_LINE_FORMAT = "[%(asctime)s][%(process)05d] %(message)s"
_WARNING_LINE_FORMAT = "[%(asctime)s][%(process)05d] %(levelname)s: %(message)s"
_CONSOLE_HANDLER_NAME = "sf_console"
_FILE_HANDLER_NAME = "sf_file"

_RESET = "\033[0m"
# INFO stays in the terminal's own colour so the bulk of the output follows the user's theme.
_LEVEL_COLOURS = {
    logging.DEBUG: "\033[36m",
    logging.INFO: "",
    logging.WARNING: "\033[33m",
    logging.ERROR: "\033[31m",
    logging.CRITICAL: "\033[1;31m",
}

log = logging.getLogger(LOGGER_NAME)


class PlainFormatter(logging.Formatter):
    """Uncoloured lines; warnings and errors carry their level name, which colour would otherwise show."""

    def __init__(self) -> None:
        # datefmt=None gives the "YYYY-mm-dd HH:MM:SS,mmm" form with milliseconds.
        super().__init__(_LINE_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's own method name)
        if record.levelno < logging.WARNING:
            return super().formatMessage(record)
        return _WARNING_LINE_FORMAT % record.__dict__


class ColorFormatter(logging.Formatter):
    """Whole line (traceback included) wrapped in the ANSI colour of its level."""

    def __init__(self) -> None:
        super().__init__(_LINE_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        colour = _LEVEL_COLOURS.get(record.levelno, "")
        return f"{colour}{text}{_RESET}" if colour else text


def _stream_is_terminal(stream: TextIO) -> bool:
    """Colour only for a real terminal; ``NO_COLOR`` (no-color.org) lets users opt out everywhere."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def make_console_handler(stream: TextIO | None = None) -> logging.Handler:
    """A stream handler (stderr by default) that colours by level only when ``stream`` is a terminal."""
    stream = sys.stderr if stream is None else stream
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ColorFormatter() if _stream_is_terminal(stream) else PlainFormatter())
    handler.set_name(_CONSOLE_HANDLER_NAME)
    return handler


def _find_handler(name: str) -> logging.Handler | None:
    return next((handler for handler in log.handlers if handler.get_name() == name), None)


def _parse_level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    text = level.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    parsed = logging.getLevelName(text.upper())
    if not isinstance(parsed, int):
        raise ValueError(f"Unknown log level {level!r}: use DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return parsed


def set_log_level(level: int | str) -> None:
    """Change the level of ``log`` (all its handlers follow it), e.g. ``set_log_level("DEBUG")``."""
    log.setLevel(_parse_level(level))


def _level_from_env() -> int:
    """``SF_LOG_LEVEL`` if set and valid; a bad value must not stop a worker from starting, so it warns."""
    value = os.environ.get(LOG_LEVEL_ENV_VAR)
    if not value:
        return logging.INFO
    try:
        return _parse_level(value)
    except ValueError as error:
        log.warning("Ignoring %s=%s: %s", LOG_LEVEL_ENV_VAR, value, error)
        return logging.INFO


def _configure_process() -> None:
    """Attach the console handler once per process; re-imports and forked children find it already there."""
    if _find_handler(_CONSOLE_HANDLER_NAME) is None:
        log.addHandler(make_console_handler())
    # Our handler prints everything already; propagating would print lines twice once anything
    # configures the root logger (logging.basicConfig in a user script or a library).
    log.propagate = False
    log.setLevel(_level_from_env())


def init_file_logger(experiment_dir: str, file_name: str = LOG_FILE_NAME) -> None:
    """Also write the log, uncoloured, to ``{experiment_dir}/sf_log.txt`` (appending, so resumed runs keep history).

    Calling it again for the same folder does nothing; calling it for another folder moves the file log there,
    since a process works for one experiment at a time. ``file_name``: the ranks of a distributed run other than
    rank 0 write ``sf_log_rank{N}.txt`` instead.
    """
    path = os.path.abspath(os.path.join(experiment_dir, file_name))
    existing = _find_handler(_FILE_HANDLER_NAME)
    if isinstance(existing, logging.FileHandler) and existing.baseFilename == path:
        return
    close_file_logger()
    os.makedirs(experiment_dir, exist_ok=True)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setFormatter(PlainFormatter())
    handler.set_name(_FILE_HANDLER_NAME)
    log.addHandler(handler)


def close_file_logger() -> None:
    """Stop writing ``sf_log.txt`` and release the file (at the end of a run, or before switching experiments)."""
    handler = _find_handler(_FILE_HANDLER_NAME)
    if handler is not None:
        log.removeHandler(handler)
        handler.close()


def init_experiment_file_logger(cfg: Config) -> None:
    """:func:`init_file_logger` for the experiment folder of ``cfg`` (``{train_dir}/{experiment}/sf_log.txt``)."""
    init_file_logger(paths.experiment_dir(cfg))


def has_file_handler() -> bool:
    """Whether ``log`` currently also writes to a file (``sf_log.txt`` or a file handler the user added).

    A handler writing to ``os.devnull`` (test runners install one) keeps nothing, so it does not count.
    """
    return any(
        isinstance(handler, logging.FileHandler) and handler.baseFilename != os.path.abspath(os.devnull)
        for handler in log.handlers
    )


_every_n_counters: dict[Any, int] = {}


def log_every_n(n: int, _level: int | str, msg: str, *args: Any, key: Any = None, **kwargs: Any) -> None:
    """Log ``msg % args`` at level ``_level`` on the 1st, (n+1)-th, (2n+1)-th... call, to keep a hot loop's log short.

    Calls are counted per ``key`` (default: the message text, so the same message from two places shares a count);
    ``kwargs`` go to :meth:`logging.Logger.log` (``exc_info=True``, ``stacklevel=...``).
    """
    if n < 1:
        raise ValueError(f"log_every_n(n={n}): n must be at least 1 (1 logs every call)")
    counter_key = msg if key is None else key
    count = _every_n_counters.get(counter_key, 0)
    if count % n == 0:
        log.log(_parse_level(_level), msg, *args, **kwargs)
    _every_n_counters[counter_key] = count + 1


def debug_log_every_n(n: int, msg: str, *args: Any, key: Any = None) -> None:
    """:func:`log_every_n` at debug level."""
    log_every_n(n, logging.DEBUG, msg, *args, key=key)


_configure_process()
