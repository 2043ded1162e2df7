"""Run the `deltasink` CLI as a real process group, optionally killing it at a chosen moment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

DELTASINK = str(Path(sys.executable).parent / "deltasink")


def killpg(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def deltasink(*args: str, fault: str | None = None, kill_after: float | None = None,
              env: Mapping[str, str] | None = None, timeout: float = 900
              ) -> subprocess.CompletedProcess[str]:
    """Run ``deltasink <args>`` in its own process group.

    Args:
        args: the CLI arguments.
        fault: a ``DELTASINK_FAULT`` spec (see ``pipelines/faults.py``).
        kill_after: SIGKILL the whole process group (driver JVM included) after this many
            seconds, as a lost node would; the return code is then ``-SIGKILL``.
        env: the environment (default: this process's, without ``DELTASINK_FAULT``).
        timeout: give up (and kill) after this many seconds.
    """
    base = dict(os.environ if env is None else env)
    base.pop("DELTASINK_FAULT", None)
    if fault:
        base["DELTASINK_FAULT"] = fault
    proc = subprocess.Popen([DELTASINK, *args], env=base, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + (kill_after if kill_after is not None else timeout)
    try:
        out, err = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        killpg(proc)
        out, err = proc.communicate()
        if kill_after is None:
            raise
        return subprocess.CompletedProcess(proc.args, -signal.SIGKILL, out, err)
    if proc.returncode < 0:  # the driver died: nothing of the job survives, JVM included
        killpg(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run(config: Path, *, validate: bool = False, **kwargs: object
        ) -> subprocess.CompletedProcess[str]:
    """``deltasink run --config <config>`` (``--no-validate`` unless ``validate``)."""
    args = ["run", "--config", str(config)] + ([] if validate else ["--no-validate"])
    return deltasink(*args, **kwargs)  # type: ignore[arg-type]
