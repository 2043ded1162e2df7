"""Work a run starts on a side thread and waits for before it ends.

A scheduled run pays for each cold Spark step in turn; two steps that do not depend on each other
(the run-metrics write after the stream, and the validation) can share the wait instead. The
work must not raise (bookkeeping catches its own failures); :class:`Aside` waits for all of it on
exit, so the process never ends in the middle of a write.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any


class Aside:
    """Side threads started with :meth:`start`, joined by :meth:`wait` and on exit."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Aside:
        return self

    def start(self, name: str, work: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``work(*args, **kwargs)`` on a daemon thread named ``name``."""
        thread = threading.Thread(target=work, args=args, kwargs=kwargs, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def wait(self) -> None:
        """Wait for everything started so far."""
        while self._threads:
            self._threads.pop(0).join()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.wait()
