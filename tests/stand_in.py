"""Stand-in interpreters for the benchmark scripts' tests: a script that answers like a trainer, whatever module it
is asked to run."""

from __future__ import annotations

import sys
from pathlib import Path


def stand_in_interpreter(folder: Path, trainer_source: str) -> str:
    """An executable that drops ``-m MODULE`` and runs ``trainer_source`` with the remaining arguments."""
    trainer = folder / "stand_in_trainer.py"
    trainer.write_text(trainer_source)
    launcher = folder / "stand_in_python"
    launcher.write_text(f'#!/bin/sh\nshift 2\nexec {sys.executable} {trainer} "$@"\n')
    launcher.chmod(0o755)
    return str(launcher)
