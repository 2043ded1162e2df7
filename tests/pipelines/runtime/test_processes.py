"""A child run in its own session (each step of ``deltasink demo``) never outlives this
process's stop: the signal is passed on and waited for, and a child that does not stop in time
is killed with its group. Real processes and real signals, to this (the main) thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipelines.cli.stops import stop_on_signals
from pipelines.runtime.processes import run_in_own_session
from pipelines.runtime.signals import SIGNALS

#: A child that writes its pid and its grandchild's (``sleep``) and then waits. On a stop
#: signal it writes the signal's name and exits 130, unless told to ignore stop signals.
CHILD = """
import os, signal, subprocess, sys, time
folder, ignore = sys.argv[1], sys.argv[2] == "ignore"
grandchild = subprocess.Popen(["sleep", "300"])
def stop(signum, _frame):
    open(os.path.join(folder, "got"), "w").write(signal.Signals(signum).name)
    grandchild.kill()
    sys.exit(130)
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, signal.SIG_IGN if ignore else stop)
open(os.path.join(folder, "pids.tmp"), "w").write(f"{os.getpid()} {grandchild.pid}")
os.rename(os.path.join(folder, "pids.tmp"), os.path.join(folder, "pids"))
time.sleep(300)
"""


def _signal_when_ready(folder: Path, signum: int) -> None:
    """Send ``signum`` to this process once the child has started (its pids are written)."""
    def send() -> None:
        deadline = time.monotonic() + 30
        while not (folder / "pids").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signum)

    threading.Thread(target=send, daemon=True).start()


def _running(folder: Path) -> list[int]:
    """The child's and grandchild's pids still running (a zombie awaiting its reaper is not)."""
    def running(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False

    return [int(p) for p in (folder / "pids").read_text().split() if running(int(p))]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_of_this_process_is_passed_on_and_the_child_stops_before_it_raises(
        tmp_path: Path, signum: int) -> None:
    SIGNALS.clear()
    _signal_when_ready(tmp_path, signum)
    with stop_on_signals(), pytest.raises(KeyboardInterrupt):
        run_in_own_session([sys.executable, "-c", CHILD, str(tmp_path), "stop"])

    assert (tmp_path / "got").read_text() == signal.Signals(signum).name
    assert _running(tmp_path) == []


def test_a_child_that_does_not_stop_in_time_is_killed_with_its_group(tmp_path: Path) -> None:
    SIGNALS.clear()
    _signal_when_ready(tmp_path, signal.SIGINT)
    started = time.monotonic()
    with stop_on_signals(), pytest.raises(KeyboardInterrupt):
        run_in_own_session([sys.executable, "-c", CHILD, str(tmp_path), "ignore"], grace=1.0)

    assert not (tmp_path / "got").exists()  # it ignored the signal ...
    assert _running(tmp_path) == []  # ... and its group is gone
    assert time.monotonic() - started < 60


def test_a_child_that_ends_by_itself_gives_its_exit_code() -> None:
    assert run_in_own_session([sys.executable, "-c", "raise SystemExit(3)"]) == 3


def test_a_killed_group_is_waited_for_until_none_of_it_runs() -> None:
    from pipelines.runtime.processes import _group_running, _kill_group

    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; "
                              "time.sleep(60)']); time.sleep(60)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not _group_running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _group_running(child.pid)
        _kill_group(child.pid)
        assert not _group_running(child.pid)  # the grandchild too, at the moment it returns
    finally:
        child.kill()
        child.wait()
