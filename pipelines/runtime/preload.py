"""Import, on a side thread, what a run needs only at its end.

Great Expectations takes about 4 s to import on the 2-core dev VM, and a scheduled run pays it
on every trigger, after its batches. The driver's Python thread mostly waits while the JVM starts
and while Spark runs the batches, so ``deltasink run`` imports the validation modules then, on a
daemon thread. The main thread's own import later finds them loaded, or waits for the import in
progress (Python's per-module import locks); a failure is left for that import to report.
"""

from __future__ import annotations

import importlib
import threading


def preload(*modules: str) -> threading.Thread:
    """Start importing ``modules`` on a daemon thread and return it.

    Args:
        modules: dotted module names, imported in order.

    Returns:
        The started thread (join it to wait; it never raises).
    """

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the main thread's import reports it, with its traceback
                return

    thread = threading.Thread(target=load, name="deltasink-preload", daemon=True)
    thread.start()
    return thread
