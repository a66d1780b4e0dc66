"""Watch the pursuer and the evader trained by ``sf_examples.train_asymmetric_multi_env``, each by its own policy.

    python -m sf_examples.enjoy_asymmetric_multi_env --experiment=pursuit

Each kind of agent acts with a policy trained for its spaces (policy 0 the pursuer, policy 1 the evader); with a
larger population ``--policy_index`` picks the policy of its kind and the other kind uses its first policy.
"""

from __future__ import annotations

import sys

from sample_factory.utils.typing import StatusCode
from sf_examples.entry_points import enjoy_status
from sf_examples.train_asymmetric_multi_env import parse_pursuit_args, register_pursuit_components


def main() -> StatusCode:
    register_pursuit_components()
    return enjoy_status(parse_pursuit_args(evaluation=True))


if __name__ == "__main__":
    sys.exit(main())
