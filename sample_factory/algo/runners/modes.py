"""Which runner a config asks for: every component in this process (``--serial_mode=True``) or one process each."""

from __future__ import annotations

from sample_factory.algo.runners.runner import Runner
from sample_factory.utils.typing import Config


def runner_class(cfg: Config) -> type[Runner]:
    """The serial runner for ``--serial_mode=True``, else the parallel one (imported only when chosen)."""
    if cfg.serial_mode:
        from sample_factory.algo.runners.runner_serial import SerialRunner

        return SerialRunner
    from sample_factory.algo.runners.runner_parallel import ParallelRunner

    return ParallelRunner
