"""The local servers' ports: free, and never from the range client connections take theirs from."""

from __future__ import annotations

import random
import socket
from pathlib import Path

from pipelines.kafka.broker import free_port_pair
from pipelines.runtime import ports


def test_ports_are_drawn_below_the_kernels_ephemeral_range_and_are_bindable() -> None:
    low, high = ports.ephemeral_range()
    for _ in range(50):
        port = free_port_pair()
        assert ports.LOWEST <= port and port + 1 < low, (port, low, high)
        assert ports.bindable(port) and ports.bindable(port + 1)


def test_a_port_in_use_is_never_handed_out(tmp_path: Path) -> None:
    # a range file that leaves exactly one candidate run below the ephemeral range: 20000..21001
    narrow = tmp_path / "range"
    narrow.write_text(f"{ports.LOWEST + 1002}\t60999\n")
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        first = ports.free_ports(1, source=narrow, rng=random.Random(7))
        listener.bind(("127.0.0.1", first))
        listener.listen()
        assert ports.port_open(first)
        rng = random.Random(7)  # the same draws again: the port now taken must be skipped
        again = ports.free_ports(1, source=narrow, rng=rng)
        assert again != first and ports.LOWEST <= again <= ports.LOWEST + 1001


def test_an_unreadable_range_file_falls_back_to_linuxs_default(tmp_path: Path) -> None:
    assert ports.ephemeral_range(tmp_path / "absent") == ports.DEFAULT_EPHEMERAL
    garbage = tmp_path / "garbage"
    garbage.write_text("not numbers")
    assert ports.ephemeral_range(garbage) == ports.DEFAULT_EPHEMERAL
    port = ports.free_ports(2, source=tmp_path / "absent")
    assert port + 1 < ports.DEFAULT_EPHEMERAL[0]
