"""What the launcher's run descriptions and backends share: seeds, job templates, tables and the status line."""

from __future__ import annotations

import functools
import sys
from argparse import ArgumentTypeError
from importlib.resources import files
from typing import TextIO

from sample_factory.utils.flag_table import FlagTable, read_flag_table

# far apart so that seeds of different runs rarely coincide, and fixed so that re-running a sweep gives the same
# experiment names (and so resumes the same folders) instead of new random ones
SEED_STEP = 1111
HEARTBEAT_S = 60.0  # status line period when the output is not a terminal and nothing changed


class LauncherError(ValueError):
    """Bad input to the launcher (a run description, a flag, a template); the message names the cause and the fix."""


def seeds(num_seeds: int) -> list[int]:
    """``num_seeds`` distinct, deterministic seeds (0, 1111, 2222, ...) for ``ParamGrid([("seed", seeds(4)), ...])``."""
    if num_seeds < 1:
        raise LauncherError(f"seeds(num_seeds={num_seeds}): ask for at least one seed")
    return [i * SEED_STEP for i in range(num_seeds)]


def read_template(path: str | None, default: str, flag: str) -> str:
    """A backend's job template: the file ``path`` names (given with ``flag``), or ``default`` when there is none."""
    if path is None:
        return default
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise LauncherError(f"{flag}={path}: cannot read it ({e.strerror})") from e


def format_duration(seconds: float) -> str:
    """``H:MM:SS``: elapsed times in the launcher's status line and tables."""
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with left-aligned columns (readable in a terminal and in a copied log)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def str2bool(value: str | bool) -> bool:
    """Command-line booleans as the training flags read them (True/False, yes/no, 1/0).

    Kept here rather than imported from ``sample_factory.utils``, which pulls in gymnasium and numpy: the launcher
    starts in a fraction of a second on a login node.
    """
    if isinstance(value, bool):
        return value
    lowered = str(value).strip().lower()
    if lowered in ("true", "yes", "y", "1", "t"):
        return True
    if lowered in ("false", "no", "n", "0", "f"):
        return False
    raise ArgumentTypeError(f"{value!r} is not a boolean: use True or False")


class StatusLine:
    """The live one-line summary: rewritten in place on a terminal, printed on change (or each minute) otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.last_counts = ""
        self.last_print = -HEARTBEAT_S

    def update(self, counts: dict[str, int], elapsed_s: float) -> None:
        summary = ", ".join(f"{n} {state}" for state, n in counts.items())
        text = f"[launcher] {summary} | elapsed {format_duration(elapsed_s)}"
        if self.tty:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
        elif summary != self.last_counts or elapsed_s - self.last_print >= HEARTBEAT_S:
            self.print(text)
            self.last_print = elapsed_s
        self.last_counts = summary

    def print(self, line: str) -> None:
        """An event line, kept above the live status line."""
        prefix = "\r\033[K" if self.tty else ""
        self.stream.write(f"{prefix}{line}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


@functools.cache
def launcher_flags() -> FlagTable:
    """The launcher's flags (``flags.tsv`` of this package): the common ones and one section per backend."""
    return read_flag_table(files(__package__), {"int": int, "float": float, "str2bool": str2bool})
