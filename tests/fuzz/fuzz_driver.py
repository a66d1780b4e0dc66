"""Runs several tiny serial-mode trainings in one process, so the fuzz pays the torch import once.

``python tests/fuzz/fuzz_driver.py CASES.json``: the file holds a list of argv lists (CartPole, ``--serial_mode=True``).
Each is parsed and trained with :func:`run_rl` as ``sf_examples.train_gym_env`` would; one line
``FUZZ_RESULT <index> <exit status>`` per case tells the test how each ended. An exception that escapes
``run_rl`` is a bug: the driver prints its traceback and reports status ``crash``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

# the repository root, so that sample_factory and sf_examples of this checkout are imported (the script's own folder
# is what Python puts on the path)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main() -> int:
    from sample_factory.train import run_rl
    from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for index, argv in enumerate(cases):
        try:
            cfg = parse_gym_args(argv)
            register_env_from_cfg(cfg)
            status = run_rl(cfg)
        except Exception:  # noqa: BLE001  (any escape is what the fuzz looks for; report it and go on)
            traceback.print_exc()
            status = "crash"
        print(f"FUZZ_RESULT {index} {status}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
