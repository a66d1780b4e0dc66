"""ViZDoom game variables the deathmatch envs read: the ``measurements`` vector and the reward-shaping terms."""

from __future__ import annotations

NUM_WEAPON_SLOTS = 7
WEAPON_VARIABLES = tuple(f"WEAPON{slot}" for slot in range(1, NUM_WEAPON_SLOTS + 1))
AMMO_VARIABLES = tuple(f"AMMO{slot}" for slot in range(2, NUM_WEAPON_SLOTS + 1))  # slot 1 (fist/chainsaw) has none
SCORE_VARIABLES = ("FRAGCOUNT", "DEATHCOUNT", "HITCOUNT", "DAMAGECOUNT", "DAMAGE_TAKEN")
STATUS_VARIABLES = ("HEALTH", "ARMOR", "SELECTED_WEAPON", "SELECTED_WEAPON_AMMO")

# every variable registered with the game for deathmatch-style envs, in this order
DEATHMATCH_VARIABLES: tuple[str, ...] = STATUS_VARIABLES + WEAPON_VARIABLES + AMMO_VARIABLES + SCORE_VARIABLES

# divisors that bring each measurement to roughly [0, 1] (health and armour reach 200, ammo a few hundred)
MEASUREMENT_SCALES: dict[str, float] = {
    "HEALTH": 100.0,
    "ARMOR": 100.0,
    "SELECTED_WEAPON_AMMO": 50.0,
    **{name: 1.0 for name in WEAPON_VARIABLES},
    **{name: 100.0 for name in AMMO_VARIABLES},
}
# the selected weapon is a category (slot 0..7), so it is one-hot encoded rather than scaled
SELECTED_WEAPON_SLOTS = NUM_WEAPON_SLOTS + 1
NUM_MEASUREMENTS = len(MEASUREMENT_SCALES) + SELECTED_WEAPON_SLOTS
