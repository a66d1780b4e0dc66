"""Play a VizDoom env with random actions and print its speed: a check that ViZDoom works on this machine.

python -m sf_examples.vizdoom.doom.sample_env --env=doom_basic --steps=2000
"""

from __future__ import annotations

import argparse
import sys
import time

from sample_factory.utils.utils import log
from sf_examples.vizdoom.doom.doom_params import default_doom_cfg
from sf_examples.vizdoom.doom.doom_utils import make_doom_env
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS


def sample(env_name: str, steps: int, seed: int = 0) -> dict[str, float]:
    """Random actions for ``steps`` steps (headless); frames, episodes and frames per second."""
    env = make_doom_env(env_name, default_doom_cfg(env=env_name), None, None)
    frames = episodes = 0
    try:
        env.action_space.seed(seed)
        env.reset(seed=seed)
        start = time.monotonic()
        for _ in range(steps):
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            frames += int(info.get("num_frames", 1)) if isinstance(info, dict) else 1
            if terminated is True or truncated is True:
                episodes += 1
                env.reset()
        elapsed = max(time.monotonic() - start, 1e-9)
    finally:
        env.close()
    return {"frames": float(frames), "episodes": float(episodes), "fps": frames / elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="doom_basic", choices=sorted(DOOM_SPECS), help="VizDoom env to play.")
    parser.add_argument("--steps", type=int, default=1000, help="Env steps to play.")
    args = parser.parse_args()
    result = sample(args.env, args.steps)
    log.info("%s: %d frames, %d episodes, %.0f FPS", args.env, result["frames"], result["episodes"], result["fps"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
