"""A child started inside ``jvm_follows`` (as PySpark starts the driver JVM: ``subprocess`` with
a ``preexec_fn``) ignores SIGINT and SIGTERM, so a signal to the whole process group stops only
the ``deltasink`` process; this process keeps its own handlers, and children started after the
block are left alone. No JVM: ``cat`` shows its own signal dispositions."""

from __future__ import annotations

import signal
import subprocess

from pipelines.runtime.signals import jvm_follows


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
