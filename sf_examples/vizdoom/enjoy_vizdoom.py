"""Watch a VizDoom agent (a window at real-time speed, or ``--save_video`` / ``--no_render``).

python -m sf_examples.vizdoom.enjoy_vizdoom --env=doom_basic --experiment=doom_basic
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_family
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS
from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg, register_vizdoom_components


def main() -> StatusCode:
    return enjoy_family(register_vizdoom_components, parse_vizdoom_cfg, DOOM_SPECS)


if __name__ == "__main__":
    sys.exit(main())
