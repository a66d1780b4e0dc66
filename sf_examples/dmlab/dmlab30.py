"""The DMLab-30 levels, their published human and random scores, and the human-normalised score.

Scores are the per-level "human" and "random" reference scores published with IMPALA (Espeholt et al., 2018,
appendix, DMLab-30 table). The human-normalised score of a level is ``100 * (score - random) / (human - random)``;
the DMLab-30 headline figure is its mean over the 30 levels, each capped at 100.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVEL_DIR = "contributed/dmlab30/"
HNS_CAP = 100.0


@dataclass(frozen=True)
class Dmlab30Level:
    name: str  # e.g. rooms_watermaze; the level file is LEVEL_DIR + name
    human: float
    random: float

    @property
    def path(self) -> str:
        return LEVEL_DIR + self.name


_SCORES: tuple[tuple[str, float, float], ...] = (  # (level, human, random)
    ("rooms_collect_good_objects_train", 10.0, 0.1),
    ("rooms_exploit_deferred_effects_train", 85.65, 8.5),
    ("rooms_select_nonmatching_object", 65.9, 0.3),
    ("rooms_watermaze", 54.0, 4.1),
    ("rooms_keys_doors_puzzle", 53.8, 4.1),
    ("language_select_described_object", 389.5, -0.1),
    ("language_select_located_object", 280.7, 1.9),
    ("language_execute_random_task", 254.05, -5.9),
    ("language_answer_quantitative_question", 184.5, -0.3),
    ("lasertag_one_opponent_large", 12.65, -0.2),
    ("lasertag_three_opponents_large", 18.55, -0.2),
    ("lasertag_one_opponent_small", 18.55, -0.1),
    ("lasertag_three_opponents_small", 31.5, -0.1),
    ("natlab_fixed_large_map", 36.9, 2.2),
    ("natlab_varying_map_regrowth", 24.45, 3.0),
    ("natlab_varying_map_randomized", 42.35, 7.3),
    ("skymaze_irreversible_path_hard", 100.0, 0.1),
    ("skymaze_irreversible_path_varied", 100.0, 14.4),
    ("psychlab_arbitrary_visuomotor_mapping", 58.75, 0.2),
    ("psychlab_continuous_recognition", 58.3, 0.2),
    ("psychlab_sequential_comparison", 39.5, 0.1),
    ("psychlab_visual_search", 78.5, 0.1),
    ("explore_object_locations_small", 74.45, 3.6),
    ("explore_object_locations_large", 65.65, 4.7),
    ("explore_obstructed_goals_small", 206.0, 6.8),
    ("explore_obstructed_goals_large", 119.5, 2.6),
    ("explore_goal_locations_small", 267.5, 7.7),
    ("explore_goal_locations_large", 194.5, 3.1),
    ("explore_object_rewards_few", 77.7, 2.1),
    ("explore_object_rewards_many", 106.7, 2.4),
)
DMLAB30_LEVELS: dict[str, Dmlab30Level] = {name: Dmlab30Level(name, human, rand) for name, human, rand in _SCORES}


def human_normalized_score(level: str, score: float) -> float:
    """``100 * (score - random) / (human - random)`` for a DMLab-30 level (KeyError for any other level)."""
    ref = DMLAB30_LEVELS[level]
    return 100.0 * (score - ref.random) / (ref.human - ref.random)


def capped_mean_hns(per_level_hns: dict[str, float]) -> float:
    """The DMLab-30 summary: each level's human-normalised score capped at 100, averaged over the levels given."""
    if not per_level_hns:
        raise ValueError("capped_mean_hns needs at least one level's score")
    return sum(min(hns, HNS_CAP) for hns in per_level_hns.values()) / len(per_level_hns)


def dmlab30_level_name_to_level(level_name: str) -> str:
    """The level path DeepMind Lab loads for a DMLab-30 name (``rooms_watermaze`` -> ``contributed/dmlab30/...``)."""
    if level_name not in DMLAB30_LEVELS:
        raise KeyError(f"{level_name!r} is not a DMLab-30 level; choose one of {sorted(DMLAB30_LEVELS)}")
    return DMLAB30_LEVELS[level_name].path


def dmlab30_num_envs() -> int:
    """How many envs a ``dmlab_30`` run needs at least so that every level is played (one per level)."""
    return len(DMLAB30_LEVELS)
