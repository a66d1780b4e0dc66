"""Evaluate a policy trained by ``sf_examples.train_gym_env`` on many envs at once.

python -m sf_examples.eval_gym_env --env=CartPole-v1 --experiment=cartpole --max_num_episodes=200

Writes ``eval_results.csv`` (one row per episode) into the experiment folder and logs a summary. Kept as the
Gymnasium family's script next to its train/enjoy scripts; it is ``python -m sample_factory.eval``, which
evaluates experiments of every family.
"""

from __future__ import annotations

import sys

from sample_factory.eval import main

if __name__ == "__main__":
    sys.exit(main())
