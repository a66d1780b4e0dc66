"""One networked player of a ViZDoom deathmatch, configured the way Sample Factory 2's constructor takes it."""

from __future__ import annotations

import os

import gymnasium as gym

from sf_examples.vizdoom.doom.doom_gym import VizdoomEnv
from sf_examples.vizdoom.doom.game_setup import GameOptions, NetworkRole
from sf_examples.vizdoom.doom.lifecycle import port_is_free
from sf_examples.vizdoom.doom.scenarios import ActionKind, DoomSpec

DEFAULT_UDP_PORT = 40300
PORT_TRIES = 20


def find_available_port(start_port: int, increment: int = 1000) -> int:
    """The first free port of ``start_port``, ``start_port + increment``, ... (``PORT_TRIES`` candidates)."""
    for attempt in range(PORT_TRIES):
        port = start_port + attempt * increment
        if port < 65536 and port_is_free(port):
            return port
    raise RuntimeError(
        f"no free UDP port among {start_port} + k * {increment} (k < {PORT_TRIES}): stop other ViZDoom matches or "
        "pass another --doom_base_port"
    )


class VizdoomEnvMultiplayer(VizdoomEnv):
    """Player ``player_id`` of a deathmatch of ``max_num_players`` players: player 0 hosts the game (and adds
    ``num_bots`` bots), the others join it on ``port`` (default: a free port from ``DEFAULT_UDP_PORT``, which the
    clients must then be given). ``timelimit`` is the match length in minutes, ``respawn_delay`` the seconds a
    fragged player waits; ``num_agents`` of the players are agents."""

    def __init__(
        self,
        action_space: gym.Space | None,
        config_file: str,
        player_id: int,
        num_agents: int,
        max_num_players: int,
        num_bots: int,
        skip_frames: int = 1,
        async_mode: bool = False,
        respawn_delay: float = 0.0,
        timelimit: float = 4.0,
        record_to: str | None = None,
        render_mode: str | None = None,
        *,
        port: int | None = None,
    ) -> None:
        if not 0 <= player_id < max_num_players or num_agents > max_num_players:
            raise ValueError(
                f"player_id={player_id} must be in [0, max_num_players={max_num_players}) and "
                f"num_agents={num_agents} at most max_num_players"
            )
        if port is None and player_id != 0:
            raise ValueError("a joining player (player_id > 0) needs the host's port=")
        name = os.path.splitext(os.path.basename(config_file))[0]
        spec = DoomSpec(
            name, config_file, action_space if action_space is not None else ActionKind.DEATHMATCH,
            num_agents=num_agents, num_bots=num_bots, respawn_delay=respawn_delay, timelimit=timelimit or None,
            deathmatch=True,
        )  # fmt: skip
        network = NetworkRole(host=player_id == 0, num_players=max_num_players, player_index=player_id)
        network.port = port if port is not None else find_available_port(DEFAULT_UDP_PORT)
        self.player_id = player_id
        super().__init__(
            skip_frames=skip_frames, async_mode=async_mode, record_to=record_to, render_mode=render_mode, spec=spec,
            options=GameOptions(), network=network, num_bots=num_bots if player_id == 0 else 0,
        )  # fmt: skip
