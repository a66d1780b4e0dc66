"""Network functions for envs that talk over local ports (e.g. multiplayer simulators that host a game server)."""

from __future__ import annotations

import socket


def is_udp_port_available(port: int) -> bool:
    """True if a UDP socket can be bound to ``port`` on all interfaces right now.

    A check, not a reservation: another process may take the port between this call and the caller's bind, so callers
    that race (several envs picking ports) should still handle a failed bind. The probe socket is always closed.
    """
    if not 0 <= int(port) <= 65535:
        raise ValueError(f"port={port} is not a valid port number: use 0..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind(("", int(port)))
        except OSError:
            return False
    return True
