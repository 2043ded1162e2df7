"""A child started inside ``jvm_follows`` (as PySpark starts the driver JVM: ``subprocess`` with
a ``preexec_fn``) ignores SIGINT and SIGTERM, so a signal to the whole process group stops only
the ``deltasink`` process; this process keeps its own handlers, and children started after the
block are left alone. No JVM: ``cat`` shows its own signal dispositions.

A stop signal to a run's watch loop (``deferred``) is polled there, between two Spark calls,
instead of raised inside one."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from pipelines.cli.stops import stop_on_signals
from pipelines.runtime.signals import SIGNALS, deferred, jvm_follows, note_signal, raise_now


def ignored_by_child(**popen: object) -> set[int]:
    """The signals a child process (``cat /proc/self/status``) starts with ignored."""
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True,
                            check=True, **popen).stdout  # type: ignore[call-overload]
    mask = next(int(line.split()[1], 16) for line in status.splitlines()
                if line.startswith("SigIgn:"))
    return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}


def test_a_child_forked_inside_jvm_follows_ignores_stop_signals_and_this_process_does_not(
        ) -> None:
    handler = signal.getsignal(signal.SIGTERM)
    with jvm_follows():
        inside = ignored_by_child(preexec_fn=lambda: None)
        assert signal.getsignal(signal.SIGTERM) is handler  # this process: unchanged
    after = ignored_by_child(preexec_fn=lambda: None)

    assert {signal.SIGINT, signal.SIGTERM} <= inside
    assert signal.SIGTERM not in after
    assert signal.getsignal(signal.SIGTERM) is handler


def test_inside_deferred_the_first_stop_signal_is_polled_and_a_second_one_raises() -> None:
    """The run's watch loop stops between two Spark calls, not inside one; a second Ctrl-C still
    stops at once. The command's own handler, on this (the main) thread, with a real signal."""
    SIGNALS.clear()
    with stop_on_signals():
        with deferred() as signalled:
            assert not signalled()
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)  # the handler runs between two bytecodes: it has, and did not raise
            assert signalled()
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
        with pytest.raises(KeyboardInterrupt):  # outside the block a signal raises at once
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    assert SIGNALS == [signal.SIGTERM, signal.SIGINT, signal.SIGTERM]
    SIGNALS.clear()


def test_a_block_outside_the_main_thread_only_polls() -> None:
    """A group's pipeline watches its query on a worker thread: the main thread's handler raises
    there as before (in the main thread), and the worker's block sees the signal by polling."""
    SIGNALS.clear()
    seen: list[bool] = []

    def worker() -> None:
        with deferred() as signalled:
            note_signal(signal.SIGTERM)
            seen.append(signalled())
            seen.append(raise_now())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [True, True]  # the main thread defers nothing: its handler would raise
    SIGNALS.clear()
