"""How a command stops: SIGINT and SIGTERM end it as Ctrl-C does, in one line.

A scheduler cancelling a job sends SIGTERM; a person presses Ctrl-C. Either is noted in
:data:`pipelines.runtime.signals.SIGNALS` and raised as ``KeyboardInterrupt`` in the main
thread, or, inside a :func:`pipelines.runtime.signals.deferred` block (a run's watch loop),
left to that block to stop on its next turn; the command then ends with :func:`stopped_line`
and 128 + the signal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pipelines.runtime.signals import note_signal, raise_now


def stopped_line(signum: int, command: str) -> str:
    """The one line a command stopped by ``signum`` ends with."""
    name = signal.Signals(signum).name
    word = "interrupted" if name == "SIGINT" else "terminated"
    if command != "run":
        return f"{word} ({name}): stopped"
    return f"{word} ({name}): stopped; the next run continues where this one stopped"


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM (a scheduler cancelling the job) stops a command as Ctrl-C does; both are noted
    in :data:`pipelines.runtime.signals.SIGNALS`. Only in the main thread, and undone on the way out
    (``main`` may run in-process, in a test)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        note_signal(signum)
        if raise_now():
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
