"""The ``atari_*`` env names: the 57 games of the Atari-57 benchmark, named as in Sample Factory 2.

A name is ``atari_`` plus the game's ale-py id in lower case (``BeamRider`` -> ``atari_beamrider``), except
``atari_montezuma`` for Montezuma's Revenge, Sample Factory 2's name for it.
"""

from __future__ import annotations

# ale-py game ids (``ALE/<Game>-v5``) of the Atari-57 benchmark
ATARI_57_GAMES: tuple[str, ...] = (
    "Alien",
    "Amidar",
    "Assault",
    "Asterix",
    "Asteroids",
    "Atlantis",
    "BankHeist",
    "BattleZone",
    "BeamRider",
    "Berzerk",
    "Bowling",
    "Boxing",
    "Breakout",
    "Centipede",
    "ChopperCommand",
    "CrazyClimber",
    "Defender",
    "DemonAttack",
    "DoubleDunk",
    "Enduro",
    "FishingDerby",
    "Freeway",
    "Frostbite",
    "Gopher",
    "Gravitar",
    "Hero",
    "IceHockey",
    "Jamesbond",
    "Kangaroo",
    "Krull",
    "KungFuMaster",
    "MontezumaRevenge",
    "MsPacman",
    "NameThisGame",
    "Phoenix",
    "Pitfall",
    "Pong",
    "PrivateEye",
    "Qbert",
    "Riverraid",
    "RoadRunner",
    "Robotank",
    "Seaquest",
    "Skiing",
    "Solaris",
    "SpaceInvaders",
    "StarGunner",
    "Surround",
    "Tennis",
    "TimePilot",
    "Tutankham",
    "UpNDown",
    "Venture",
    "VideoPinball",
    "WizardOfWor",
    "YarsRevenge",
    "Zaxxon",
)
# names that differ from "atari_" + the lower-case game id
SPECIAL_NAMES: dict[str, str] = {"MontezumaRevenge": "atari_montezuma"}


def env_name_of(game: str) -> str:
    return SPECIAL_NAMES.get(game, f"atari_{game.lower()}")


# env name -> ale-py id
ATARI_ENVS: dict[str, str] = {env_name_of(game): f"ALE/{game}-v5" for game in ATARI_57_GAMES}
