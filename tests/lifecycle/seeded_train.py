"""``sf_examples.train_gym_env`` with torch, numpy and random seeded from ``--seed`` first.

The library's ``--seed`` seeds the envs and the rollout workers but not torch (see the resume test), so this
wrapper supplies the missing seeding to show that a serial run is otherwise reproducible.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import torch

from sf_examples.train_gym_env import main

if __name__ == "__main__":
    seed = int(next(arg for arg in sys.argv if arg.startswith("--seed=")).split("=", 1)[1])
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    sys.exit(main())
