"""Free loopback ports for the local servers (the embedded broker, the Spark Connect server).

A port handed out by binding port 0 comes from the kernel's ephemeral range, the same range every
outgoing connection's local port comes from. A server that starts a few seconds after the port
was found free, or restarts on the same port after a stop, can then find it taken by some
client's connection (CI saw the embedded broker's controller port go that way). So the ports
here are drawn at random from *below* the ephemeral range, where the kernel never assigns a
client's port, and each is checked by binding it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

from pipelines.errors import EnvironmentSetupError

#: Where Linux keeps the ephemeral range (``low high``).
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Lowest port handed out: above the well-known and most registered service ports.
LOWEST = 20_000
#: The ephemeral range assumed where the kernel does not say (Linux's default).
DEFAULT_EPHEMERAL = (32_768, 60_999)


def ephemeral_range(source: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range of client ports, ``(low, high)``; Linux's default if unreadable."""
    try:
        low, high = (int(part) for part in source.read_text().split()[:2])
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def bindable(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``host:port`` now."""
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(count: int = 1, *, source: Path = EPHEMERAL_RANGE_FILE,
               rng: random.Random | None = None) -> int:
    """A port P such that P .. P+count-1 are all free and outside the ephemeral range.

    Args:
        count: how many consecutive ports are needed (the broker needs two).
        source: the file holding the ephemeral range (for tests).
        rng: the random source (for tests).

    Returns:
        The first of the ports.

    Raises:
        EnvironmentSetupError: no such run of ports was found after 200 tries.
    """
    pick = rng or random.Random()
    low, high = ephemeral_range(source)
    if low - count > LOWEST + 1000:  # below the ephemeral range if there is room there
        first, last = LOWEST, low - count
    elif 65_535 - high > count + 1000:  # else above it
        first, last = high + 1, 65_535 - count + 1
    else:  # the whole range is ephemeral: best effort
        first, last = 1024, 65_535 - count + 1
    for _ in range(200):
        port = pick.randint(first, last)
        if all(bindable(port + offset) for offset in range(count)):
            return port
    raise EnvironmentSetupError(f"found no {count} free consecutive loopback port(s)")
