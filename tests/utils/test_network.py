"""UDP port availability check."""

from __future__ import annotations

import socket

import pytest

from sample_factory.utils.network import is_udp_port_available


def test_port_taken_by_another_socket_is_unavailable_then_free_again():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("", 0))
        port = holder.getsockname()[1]
        assert is_udp_port_available(port) is False
    assert is_udp_port_available(port) is True
    # the check must not keep the port: a second check and a real bind both succeed
    assert is_udp_port_available(port) is True
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
        again.bind(("", port))


def test_invalid_port_is_refused():
    with pytest.raises(ValueError, match="65535"):
        is_udp_port_available(70000)
