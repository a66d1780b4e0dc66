"""Watch a policy trained by ``sf_examples.train_custom_env_custom_model``.

    python -m sf_examples.enjoy_custom_env_custom_model --env=my_custom_env_v1 --experiment=custom_grid

The same parse and registration as training: the env and the custom encoder must exist before enjoy rebuilds
the model from the checkpoint.
"""

from __future__ import annotations

import sys

from sample_factory.enjoy import enjoy
from sample_factory.utils.typing import StatusCode
from sf_examples.train_custom_env_custom_model import parse_custom_args, register_custom_components


def main() -> StatusCode:
    register_custom_components()
    cfg = parse_custom_args(evaluation=True)
    status, _ = enjoy(cfg)
    return status


if __name__ == "__main__":
    sys.exit(main())
