"""Watch the policy trained by ``sf_examples.train_custom_multi_env`` control both agents.

    python -m sf_examples.enjoy_custom_multi_env --env=my_custom_multi_env_v1 --experiment=custom_multi

With ``--num_policies=2`` in training, pick the policy with ``--policy_index``.
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.train_custom_multi_env import parse_multi_env_args, register_multi_env_components


def main() -> StatusCode:
    register_multi_env_components()
    cfg = parse_multi_env_args(evaluation=True)
    return enjoy_status(cfg)


if __name__ == "__main__":
    sys.exit(main())
