"""Watch an agent trained on an Isaac Gym task (needs NVIDIA's isaacgym, see ``train_isaacgym``).

python -m sf_examples.isaacgym_examples.enjoy_isaacgym --env=Ant --experiment=isaacgym_ant
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.isaacgym_examples.train_isaacgym import parse_isaacgym_cfg, register_isaacgym_custom_components


def main() -> StatusCode:
    register_isaacgym_custom_components()
    return enjoy_status(parse_isaacgym_cfg(evaluation=True))


if __name__ == "__main__":
    sys.exit(main())
