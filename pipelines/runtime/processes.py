"""Processes of this host: whether one is alive (the broker's pid file, a checkpoint lease's
holder), and a child command that never outlives this process's stop."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping

from pipelines.runtime.signals import SIGNALS

#: Seconds a child gets to stop on the signal passed on to it, before its group is killed.
STOP_GRACE = 120.0


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (one we may not signal counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (a child started in a session of its own, and
    its children: a Spark JVM), if any of it is left."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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
