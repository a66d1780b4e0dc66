"""A one-dimensional brax env in plain jax, for testing BraxEnv's batching logic without a physics compile.

State: a position ``x`` that starts uniformly in [-0.1, 0.1] and moves by the action each step. Observation:
``[x, steps]``; reward: ``x``; the episode terminates when ``|x| > 1.25``.
"""

from __future__ import annotations

from typing import Any

from sf_examples.brax.brax_env import require_brax

require_brax()  # sets MUJOCO_GL before brax imports MuJoCo, as the family's scripts do

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from brax.envs.base import Env, State  # noqa: E402

THRESHOLD = 1.25
START_NOISE = 0.1


class ToyEnv(Env):
    """Moves a point by its action; done beyond ``threshold``."""

    def __init__(self, threshold: float = THRESHOLD) -> None:
        self.threshold = threshold

    def reset(self, rng: Any) -> State:
        x = jax.random.uniform(rng, (), minval=-START_NOISE, maxval=START_NOISE)
        pipeline = {"x": x, "t": jnp.zeros(())}
        return State(pipeline, self._obs(pipeline), jnp.zeros(()), jnp.zeros(()), {}, {})

    def step(self, state: State, action: Any) -> State:
        x = state.pipeline_state["x"] + action[0]
        pipeline = {"x": x, "t": state.pipeline_state["t"] + 1}
        done = jnp.where(jnp.abs(x) > self.threshold, 1.0, 0.0)
        return state.replace(pipeline_state=pipeline, obs=self._obs(pipeline), reward=x, done=done)

    @staticmethod
    def _obs(pipeline: dict) -> Any:
        return jnp.stack([pipeline["x"], pipeline["t"]])

    @property
    def observation_size(self) -> int:
        return 2

    @property
    def action_size(self) -> int:
        return 1

    @property
    def backend(self) -> str:
        return "toy"
