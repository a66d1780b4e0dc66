"""The zoo's tasks: what each trains, to what budget, and the score Sample Factory 2 publishes for it.

Facts from Sample Factory 2's documentation: its MuJoCo models trained for 10M env steps with the MuJoCo family's
defaults and its VizDoom models (evaluated over 10 episodes each, "mean +/- std"); the budget its docs give for the
"basic" VizDoom scenarios (500M env frames) and for Battle (4B). Pong's target (18 at 10M frames) is this project's
own bar. A task without a published score is recorded as a curve and a final score.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ZooTask:
    env: str
    train_module: str
    budget: int  # env steps (frames for VizDoom and Atari, as --train_for_env_steps counts them)
    published_mean: float | None = None
    published_std: float | None = None
    source: str = ""
    extra_flags: tuple[str, ...] = ()
    # a bar of our own where nothing is published (e.g. Pong >= 18)
    target: float | None = None
    # why the task cannot be trained with this package, where it cannot ("" where it can)
    unavailable: str = ""

    def default_of(self, flag: str) -> Any:
        """The value ``--flag`` takes in a command that does not name it: the family's default where its train module
        sets one (``FAMILY_DEFAULTS``), else the package's own (``sample_factory/cfg/flags.tsv``)."""
        module, name = FAMILY_DEFAULTS[self.train_module]
        family = getattr(importlib.import_module(module), name)
        if flag in family:
            return family[flag]
        from sample_factory.cfg.cfg import standard_flags

        specs = [spec for spec in standard_flags().flags if spec.flag == f"--{flag}"]
        if not specs:
            raise KeyError(f"--{flag} is not a flag of sample_factory/cfg/flags.tsv; check its spelling")
        return specs[0].default

    def threshold_90(self) -> float | None:
        """The score that counts as 'reached 90 %': within 10 % of the published score's magnitude below it."""
        reference = self.published_mean if self.published_mean is not None else self.target
        return None if reference is None else reference - 0.1 * abs(reference)

    def passes(self, score: float) -> bool | None:
        """At least the published mean minus one standard deviation (or the target); None without either."""
        if self.published_mean is not None:
            return score >= self.published_mean - (self.published_std or 0.0)
        return None if self.target is None else score >= self.target


_MUJOCO = "sf_examples.mujoco.train_mujoco"
_MUJOCO_SRC = "Sample Factory 2 docs, MuJoCo models (10M env steps, 10 evaluation episodes)"
_SF2_TASKS = ("--mujoco_version=v4",)  # the Gymnasium v4 tasks SF2's models were trained on, said in the command
_DOOM = "sf_examples.vizdoom.train_vizdoom"
_DOOM_BASIC_BUDGET = 500_000_000  # SF2 docs: the six "basic" VizDoom scenarios, --train_for_env_steps=500000000
_ATARI = "sf_examples.atari.train_atari"
# the defaults each family's train module sets on Sample Factory's flags (Sample Factory 2's values): (module, name)
FAMILY_DEFAULTS: dict[str, tuple[str, str]] = {
    _MUJOCO: ("sf_examples.mujoco.mujoco_params", "MUJOCO_DEFAULTS"),
    _DOOM: ("sf_examples.vizdoom.doom.doom_params", "DOOM_DEFAULTS"),
    _ATARI: ("sf_examples.atari.atari_params", "ATARI_DEFAULTS"),
}

TASKS: dict[str, ZooTask] = {
    "mujoco_ant": ZooTask("mujoco_ant", _MUJOCO, 10_000_000, 5876.09, 166.99, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_halfcheetah": ZooTask("mujoco_halfcheetah", _MUJOCO, 10_000_000, 6262.56, 67.29, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_humanoid": ZooTask("mujoco_humanoid", _MUJOCO, 10_000_000, 5439.48, 1314.24, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_walker": ZooTask("mujoco_walker", _MUJOCO, 10_000_000, 5487.74, 48.96, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_hopper": ZooTask("mujoco_hopper", _MUJOCO, 10_000_000, 2793.44, 642.58, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_doublependulum": ZooTask(
        "mujoco_doublependulum", _MUJOCO, 10_000_000, 9350.13, 1.31, _MUJOCO_SRC, _SF2_TASKS
    ),
    "mujoco_pendulum": ZooTask("mujoco_pendulum", _MUJOCO, 10_000_000, 1000.0, 0.0, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_reacher": ZooTask("mujoco_reacher", _MUJOCO, 10_000_000, -4.53, 1.79, _MUJOCO_SRC, _SF2_TASKS),
    "mujoco_swimmer": ZooTask("mujoco_swimmer", _MUJOCO, 10_000_000, 117.28, 2.91, _MUJOCO_SRC, _SF2_TASKS),
    "doom_basic": ZooTask("doom_basic", _DOOM, _DOOM_BASIC_BUDGET, source="SF2 docs: basic scenarios' budget"),
    "doom_defend_the_center": ZooTask(
        "doom_defend_the_center", _DOOM, _DOOM_BASIC_BUDGET, source="SF2 docs: basic scenarios' budget"
    ),
    "doom_health_gathering_supreme": ZooTask(
        "doom_health_gathering_supreme", _DOOM, _DOOM_BASIC_BUDGET, source="SF2 docs: basic scenarios' budget"
    ),
    "doom_battle": ZooTask(
        "doom_battle",
        _DOOM,
        4_000_000_000,
        59.37,
        3.93,
        "SF2 docs, VizDoom Battle model (GPU machines)",
        unavailable="its map is Sample Factory 2's own, which the vizdoom package does not ship (docs/vizdoom.md)",
    ),
    "atari_pong": ZooTask("atari_pong", _ATARI, 10_000_000, target=18.0, source="this project's bar at 10M frames"),
    "atari_breakout": ZooTask("atari_breakout", _ATARI, 10_000_000, source="curve at 10M frames"),
}
