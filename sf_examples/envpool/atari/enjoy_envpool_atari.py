"""Watch an EnvPool Atari agent: env 0 of the pool (``--env_agents=1`` simulates just that one game), in a window
or, with ``--save_video --no_render``, as an MP4:

    python -m sf_examples.envpool.atari.enjoy_envpool_atari --env=envpool_atari_breakout --experiment=breakout
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.envpool.atari.train_envpool_atari import SCRIPTS


def main() -> StatusCode:
    return SCRIPTS.enjoy()


if __name__ == "__main__":
    sys.exit(main())
