"""Game variables as a second observation: the ``measurements`` vector beside the screen."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sf_examples.vizdoom.doom.game_variables import MEASUREMENT_SCALES, NUM_MEASUREMENTS, SELECTED_WEAPON_SLOTS


class DoomMeasurementsWrapper(gym.ObservationWrapper):
    """Observation ``{"obs": screen, "measurements": float32[NUM_MEASUREMENTS]}``.

    Health, armour, ammo and owned weapons are hard to read from a 128x72 frame but decide whether to fight,
    flee or pick things up, so they are given to the policy directly.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        game_env = env.unwrapped
        self._scaled_columns = np.array([game_env.variable_index[name] for name in MEASUREMENT_SCALES])
        self._scales = np.array(list(MEASUREMENT_SCALES.values()), dtype=np.float64)
        self._weapon_column = game_env.variable_index["SELECTED_WEAPON"]
        self.observation_space = gym.spaces.Dict(
            {
                "obs": env.observation_space,
                "measurements": gym.spaces.Box(-10.0, 10.0, shape=(NUM_MEASUREMENTS,), dtype=np.float32),
            }
        )
        self._measurements = np.zeros(NUM_MEASUREMENTS, dtype=np.float32)

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {"obs": observation, "measurements": self.measurements()}

    def measurements(self) -> np.ndarray:
        """Scaled variables, then the one-hot selected weapon slot."""
        variables = self.env.unwrapped.game_variables
        out = np.zeros(NUM_MEASUREMENTS, dtype=np.float32)
        scaled = len(self._scales)
        out[:scaled] = np.clip(variables[self._scaled_columns] / self._scales, -10.0, 10.0)
        slot = int(variables[self._weapon_column])
        out[scaled + min(max(slot, 0), SELECTED_WEAPON_SLOTS - 1)] = 1.0
        return out


class DoomAdditionalInput(DoomMeasurementsWrapper):
    """Sample Factory 2's name for :class:`DoomMeasurementsWrapper` (the game variables as an extra input)."""
