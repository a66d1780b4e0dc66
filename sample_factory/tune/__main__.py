"""``python -m sample_factory.tune``: parse the tuner's flags, tune, print the table and then the command.

Progress goes to the log (stderr); the table and the command go to stdout, the command last.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sample_factory.tune.options import parse_tune_args
from sample_factory.tune.report import render
from sample_factory.tune.search import Machine
from sample_factory.tune.tuner import TuneError, Tuner
from sample_factory.utils.logging_setup import log


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_tune_args(argv)
    try:
        report = Tuner(opts, Machine.detect()).tune()
    except TuneError as error:
        log.error("%s", error)
        return 1
    except KeyboardInterrupt:
        log.warning("Tuning interrupted: its trials were stopped and their folder removed")
        return 130
    sys.stderr.flush()
    print(render(report, opts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
