"""Wrappers of the VizDoom envs, one module each; every name is importable from this package too.

The deathmatch wrappers read the game variables of the innermost ``VizdoomEnv`` (``env.unwrapped``) instead of
passing them through ``info``, so no per-step dictionaries are built.
"""

from sf_examples.vizdoom.doom.wrappers.additional_input import DoomAdditionalInput, DoomMeasurementsWrapper
from sf_examples.vizdoom.doom.wrappers.bot_difficulty import BotDifficultyWrapper
from sf_examples.vizdoom.doom.wrappers.exploration import ExplorationWrapper
from sf_examples.vizdoom.doom.wrappers.multiplayer_stats import MultiplayerStatsWrapper, match_standings
from sf_examples.vizdoom.doom.wrappers.observation_space import SetResolutionWrapper
from sf_examples.vizdoom.doom.wrappers.reward_shaping import (
    DEFAULT_DEATHMATCH_SHAPING,
    DoomRewardShapingWrapper,
    true_objective_frags,
    true_objective_winning_the_game,
)
from sf_examples.vizdoom.doom.wrappers.scenario_wrappers.gathering_reward_shaping import DoomGatheringRewardShaping
from sf_examples.vizdoom.doom.wrappers.step_human_input import StepHumanInput

__all__ = [
    "DEFAULT_DEATHMATCH_SHAPING", "BotDifficultyWrapper", "DoomAdditionalInput", "DoomGatheringRewardShaping",
    "DoomMeasurementsWrapper", "DoomRewardShapingWrapper", "ExplorationWrapper", "MultiplayerStatsWrapper",
    "SetResolutionWrapper", "StepHumanInput", "match_standings", "true_objective_frags",
    "true_objective_winning_the_game",
]  # fmt: skip
