"""Stop signals (SIGINT, SIGTERM): the record of those this process received, and a driver JVM
that follows its ``deltasink`` process instead of dying of the same signal.

**The record.** The CLI's handler and the one chained before PySpark's Ctrl-C handler
(:func:`note_interrupts`, installed by :mod:`pipelines.runtime.spark`) note each signal in
:data:`SIGNALS`; the CLI (:mod:`pipelines.cli.parser`) reads it to report a Spark call broken
by the interrupt as the interrupt it was.

**The JVM follows.** A terminal's Ctrl-C, ``kill -TERM -<pgid>``, systemd's default
control-group stop and a job cancel signal the whole process group: the ``deltasink`` process
and its driver JVM at once. PySpark already starts the JVM with SIGINT ignored; a JVM that died
of SIGTERM beside its Python parent left that parent's stop with a dead gateway (Py4J
tracebacks, failed bookkeeping writes, a continuous run that exited 143). Started inside
:func:`jvm_follows`, the JVM ignores SIGTERM too, so a group signal reaches only the Python
process, which stops the query and writes its bookkeeping as for a signal to it alone; the JVM
then exits with it (PySpark's gateway exits when its parent's pipe closes, SIGKILL included).

**A stop at a point of the run's own.** A handler that raises ``KeyboardInterrupt`` breaks
whatever the main thread is in, most often a Py4J call waiting on the JVM: that call fails, and
the stop then runs on a gateway connection left mid-answer. A loop that can stop cleanly between
two Spark calls (:func:`pipelines.query.watch`) runs inside :func:`deferred`: there the signal
is only noted, and the loop stops on its next turn. A second signal raises at once, as a
second Ctrl-C is meant to.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The stop signals (SIGINT, SIGTERM) this process received during a command, oldest first:
#: the CLI's own handler and the one chained before PySpark's Ctrl-C handler note them here, so
#: a Spark call broken by the interrupt is reported as the interrupt, not as a Spark error.
SIGNALS: list[int] = []
#: The open :func:`deferred` blocks of the main thread, innermost last: the length of
#: :data:`SIGNALS` when each began.
_DEFERRING: list[int] = []
#: The signals a process started inside :func:`jvm_follows` ignores.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def note_signal(signum: int) -> None:
    """Record that the stop signal ``signum`` arrived."""
    SIGNALS.append(signum)


def raise_now() -> bool:
    """Whether a stop handler raises ``KeyboardInterrupt`` for the signal it has just noted: yes,
    unless the main thread is in a :func:`deferred` block that had seen no signal before it."""
    return not _DEFERRING or len(SIGNALS) - _DEFERRING[-1] > 1


@contextmanager
def deferred() -> Iterator[Callable[[], bool]]:
    """A block that stops at points of its own: it polls the callable this yields (a stop signal
    arrived since the block began) and stops when it says so. In the main thread, the stop
    handlers (:func:`raise_now`) leave the block's first signal to that poll; elsewhere no
    handler runs, and the block only polls."""
    start = len(SIGNALS)
    main = threading.current_thread() is threading.main_thread()
    if main:
        _DEFERRING.append(start)
    try:
        yield lambda: len(SIGNALS) > start
    finally:
        if main:
            _DEFERRING.pop()


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


def note_interrupts() -> None:
    """Have Ctrl-C noted (:func:`note_signal`) before PySpark's own
    handler runs: that one cancels the Spark jobs and raises ``KeyboardInterrupt`` inside a Py4J
    call, which then fails as a Py4J error; the CLI reports it as the interrupt it was."""
    current = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(current) \
            or getattr(current, "_deltasink", False):
        return

    def noting(signum: int, frame: object) -> None:
        note_signal(signum)
        current(signum, frame)  # type: ignore[arg-type]

    noting._deltasink = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, noting)
