"""Processes of this host: whether one is alive (the broker's pid file, a checkpoint lease's
holder), and a child command that never outlives this process's stop."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from pipelines.runtime.signals import SIGNALS

#: Seconds a child gets to stop on the signal passed on to it, before its group is killed.
STOP_GRACE = 120.0
#: Seconds a killed group gets to be gone: SIGKILL is delivered asynchronously, and a loaded
#: machine may run a grandchild (a Spark JVM) for a moment after the call returned.
KILL_WAIT = 10.0


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (one we may not signal counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pid: int, wait: float = KILL_WAIT) -> None:
    """SIGKILL the process group led by ``pid`` (a child started in a session of its own, and
    its children: a Spark JVM), if any of it is left, and wait up to ``wait`` s until none of
    it runs any more."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while _group_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie waiting for its reaper does
    not). Read from ``/proc``; without it, whether the group can still be signalled."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def run_in_own_session(command: list[str], env: Mapping[str, str] | None = None,
                       grace: float = STOP_GRACE) -> int:
    """Run ``command`` in a session of its own and return its exit code.

    In its own session, a crash the child stages for itself (a SIGKILL of its group) takes its
    Spark JVM down with it, and nothing of this process. A killed child's group is killed too,
    as losing the machine would.

    A terminal's Ctrl-C or a group's SIGTERM does not reach that session, so when one stops this
    process (``KeyboardInterrupt`` here), it is passed on: the child gets the same signal and
    stops as it would have on its own, within ``grace`` seconds. Past them, or at a second
    signal, its group is killed. The interrupt is raised again only once the child is gone, so
    no child runs on, against a broker or a server this process then stops.

    Raises:
        KeyboardInterrupt: this process was stopped while the child ran (the child is gone).
    """
    proc = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        code = proc.wait()
    except BaseException:
        _stop(proc, grace)
        raise
    if code < 0:
        _kill_group(proc.pid)
    return code


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Pass the last stop signal on to ``proc`` and wait ``grace`` s; then kill its group."""
    try:
        proc.send_signal(SIGNALS[-1] if SIGNALS else signal.SIGINT)
        proc.wait(grace)
    except BaseException:  # it did not stop in time, or a second signal asked for no wait
        pass
    finally:
        _kill_group(proc.pid)
        proc.wait()
