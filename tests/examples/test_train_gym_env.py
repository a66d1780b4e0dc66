"""The hint ``sf_examples.train_gym_env`` prints after training names the enjoy module a script chose."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.utils import log
from sf_examples.train_gym_env import print_watch_hint


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize(
    ("enjoy_script", "expected"),
    [
        (None, "python -m sf_examples.enjoy_gym_env --env=CartPole-v1"),
        ("my_pkg.watch", "python -m my_pkg.watch --env="),
    ],
)
def test_watch_hint_names_the_enjoy_script(tmp_path: Path, enjoy_script: str | None, expected: str) -> None:
    (tmp_path / "exp").mkdir()
    cfg = AttrDict(env="CartPole-v1", experiment="exp", train_dir=str(tmp_path), enjoy_script=enjoy_script)
    handler = _Messages()
    log.addHandler(handler)
    try:
        print_watch_hint(cfg)
    finally:
        log.removeHandler(handler)
    assert any(expected in line for line in handler.lines), handler.lines
