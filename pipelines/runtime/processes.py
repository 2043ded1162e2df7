"""Whether a process of this host is alive (the broker's pid file, a checkpoint lease's holder)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (one we may not signal counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
