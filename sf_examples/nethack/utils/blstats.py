"""Positions of NLE's bottom-line statistics (``blstats``, 27 integers), so wrappers can read them without ``nle``.

The values are NLE's ``nethack.NLE_BL_*`` constants (NetHack 3.6, NLE >= 0.9); tests check them against ``nle``.
"""

from __future__ import annotations

X, Y = 0, 1
STRENGTH_PERCENT, STRENGTH, DEXTERITY, CONSTITUTION, INTELLIGENCE, WISDOM, CHARISMA = 2, 3, 4, 5, 6, 7, 8
SCORE = 9
HITPOINTS, MAX_HITPOINTS = 10, 11
DEPTH = 12
GOLD = 13
ENERGY, MAX_ENERGY = 14, 15
ARMOR_CLASS = 16
MONSTER_LEVEL = 17
EXPERIENCE_LEVEL, EXPERIENCE_POINTS = 18, 19
TIME = 20
HUNGER_STATE = 21
CARRYING_CAPACITY = 22
DUNGEON_NUMBER, LEVEL_NUMBER = 23, 24
CONDITION = 25
ALIGNMENT = 26
NUM_BLSTATS = 27

# NetHack 3.6's dungeon numbers (the order of dungeon.def): Sokoban is the fifth branch
SOKOBAN_DUNGEON = 4
