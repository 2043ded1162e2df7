"""Stop signals (SIGINT, SIGTERM): the record of those this process received, and a driver JVM
that follows its ``deltasink`` process instead of dying of the same signal.

**The record.** The CLI's handler and the one chained before PySpark's Ctrl-C handler
(:mod:`pipelines.runtime.spark`) note each signal in :data:`SIGNALS`; the CLI
(:mod:`pipelines.cli.parser`) reads it to report a Spark call broken by the interrupt as the
interrupt it was.

**The JVM follows.** A terminal's Ctrl-C, ``kill -TERM -<pgid>``, systemd's default
control-group stop and a job cancel signal the whole process group: the ``deltasink`` process
and its driver JVM at once. PySpark already starts the JVM with SIGINT ignored; a JVM that died
of SIGTERM beside its Python parent left that parent's stop with a dead gateway (Py4J
tracebacks, failed bookkeeping writes, a continuous run that exited 143). Started inside
:func:`jvm_follows`, the JVM ignores SIGTERM too, so a group signal reaches only the Python
process, which stops the query and writes its bookkeeping as for a signal to it alone; the JVM
then exits with it (PySpark's gateway exits when its parent's pipe closes, SIGKILL included).
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: The stop signals (SIGINT, SIGTERM) this process received during a command, oldest first:
#: the CLI's own handler and the one chained before PySpark's Ctrl-C handler note them here, so
#: a Spark call broken by the interrupt is reported as the interrupt, not as a Spark error.
SIGNALS: list[int] = []
#: The signals a process started inside :func:`jvm_follows` ignores.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def note_signal(signum: int) -> None:
    """Record that the stop signal ``signum`` arrived."""
    SIGNALS.append(signum)


@contextmanager
def jvm_follows() -> Iterator[None]:
    """Start every child this process forks with ``preexec_fn`` (PySpark's gateway JVM does)
    inside the block with SIGINT and SIGTERM ignored; this process keeps its own handlers.

    The child's dispositions are set between its fork and its exec (an ``os.register_at_fork``
    hook, which CPython runs for a ``subprocess`` child with a ``preexec_fn``), and an ignored
    signal stays ignored across ``exec``, through ``spark-submit``'s shell scripts and into the
    JVM, whose own shutdown handler is then never installed for it.
    """
    launching = _fork_hook()
    launching.set()
    try:
        yield
    finally:
        launching.clear()


@functools.cache
def _fork_hook() -> threading.Event:
    """Register, once per process, the fork hook of :func:`jvm_follows`; its switch."""
    launching = threading.Event()

    def in_child() -> None:
        if launching.is_set():
            for sig in STOP_SIGNALS:
                try:
                    signal.signal(sig, signal.SIG_IGN)
                except (ValueError, OSError):  # not CPython's main thread: leave it be
                    pass

    os.register_at_fork(after_in_child=in_child)
    return launching

