"""Watch an agent trained with ``train_custom_vizdoom_env``.

python -m sf_examples.vizdoom.enjoy_custom_vizdoom_env --experiment=custom
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.vizdoom.train_custom_vizdoom_env import parse_custom_cfg, register_custom_doom_env


def main() -> StatusCode:
    cfg = parse_custom_cfg(evaluation=True)
    register_custom_doom_env(cfg.custom_env_episode_len)
    return enjoy_status(cfg)


if __name__ == "__main__":
    sys.exit(main())
