"""A user's multi-agent env inside a plain ``gymnasium.Wrapper``, registered and trained through ``run_rl``.

Written as a user project would: its own env class declaring the multi-agent protocol (``num_agents``,
``is_multiagent``, per-agent lists, agents reset on their own), its own wrapper (a reward scale), its own make
function. Gymnasium 1.x wrappers do not forward attribute reads, so the protocol attributes live only on the inner
env: the library must find them through the wrapper. Used by ``test_wrapped_multi_agent_env.py``.
"""

import sys

import gymnasium as gym
import numpy as np

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl

NUM_AGENTS = 4
OBS_SIZE = 30
EPISODE_LEN = 12


class TargetsMultiEnv(gym.Env):
    """Each agent sees a one-hot target among ``OBS_SIZE`` cells and is rewarded for naming its parity."""

    num_agents = NUM_AGENTS
    is_multiagent = True

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.targets = np.zeros(NUM_AGENTS, dtype=np.int64)
        self.steps = np.zeros(NUM_AGENTS, dtype=np.int64)

    def _obs(self, agent: int) -> np.ndarray:
        obs = np.zeros(OBS_SIZE, dtype=np.float32)
        obs[self.targets[agent]] = 1.0
        return obs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.targets = self.np_random.integers(OBS_SIZE, size=NUM_AGENTS)
        self.steps[:] = 0
        return [self._obs(a) for a in range(NUM_AGENTS)], [{} for _ in range(NUM_AGENTS)]

    def step(self, actions):
        assert len(actions) == NUM_AGENTS, f"expected one action per agent, got {actions!r}"
        rewards = [float(int(actions[a]) == self.targets[a] % 2) for a in range(NUM_AGENTS)]
        self.steps += 1
        truncated = [bool(self.steps[a] >= EPISODE_LEN) for a in range(NUM_AGENTS)]
        for agent in range(NUM_AGENTS):
            self.targets[agent] = self.np_random.integers(OBS_SIZE)
            if truncated[agent]:
                self.steps[agent] = 0
        obs = [self._obs(a) for a in range(NUM_AGENTS)]
        return obs, rewards, [False] * NUM_AGENTS, truncated, [{} for _ in range(NUM_AGENTS)]


class ScaledRewards(gym.Wrapper):
    """A user's own wrapper: halves every agent's reward."""

    def step(self, actions):
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return obs, [0.5 * r for r in rewards], terminated, truncated, infos


def make_wrapped_multi_env(full_env_name, _cfg=None, _env_config=None, render_mode=None):
    return ScaledRewards(TargetsMultiEnv())


def main() -> int:
    register_env("wrapped_targets_multi", make_wrapped_multi_env)
    parser, _ = parse_sf_args()
    parser.set_defaults(env="wrapped_targets_multi", use_rnn=False, encoder_mlp_layers=[16], normalize_input=False)
    return run_rl(parse_full_cfg(parser))


if __name__ == "__main__":
    sys.exit(main())
