"""Watch the policy trained by ``sf_examples.train_pettingzoo_env`` play every agent of the env.

python -m sf_examples.enjoy_pettingzoo_env --experiment=kaz
python -m sf_examples.enjoy_pettingzoo_env --experiment=kaz --save_video --no_render --video_frames=500
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_family
from sf_examples.train_pettingzoo_env import PETTINGZOO_SPECS, parse_pettingzoo_args, register_pettingzoo_envs


def main() -> StatusCode:
    return enjoy_family(register_pettingzoo_envs, parse_pettingzoo_args, PETTINGZOO_SPECS)


if __name__ == "__main__":
    sys.exit(main())
