"""Reading the enjoy/eval-only flags from any config, training configs included.

The enjoy/eval scripts declare extra flags (``add_eval_args``, the ``eval`` section of ``flags.tsv``) that a
training config lacks; code shared by training and evaluation reads them here and gets the declared default where
the config has none.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from sample_factory.cfg.cfg import add_eval_args
from sample_factory.utils.typing import Config


@functools.cache
def _evaluation_defaults() -> dict:
    parser = argparse.ArgumentParser(add_help=False)
    add_eval_args(parser)
    return vars(parser.parse_args([]))


def evaluation_flag(cfg: Config, name: str) -> Any:
    """The value of an enjoy/eval flag (``add_eval_args``) in any config: a training config has none of them, so
    there it is the flag's declared default (code shared by training and evaluation reads them this way)."""
    values = cfg if isinstance(cfg, dict) else vars(cfg)
    if name in values:
        return values[name]
    return _evaluation_defaults()[name]
