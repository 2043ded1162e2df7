"""Stop a ``deltasink`` process as a terminal, a service manager or a job cancel does (SIGINT or
SIGTERM, to it alone or to its whole process group), and check what it printed."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import runner

#: Text that must never reach a stopped command's output: a Python traceback, a JVM stack trace,
#: Py4J's own log lines, a warning of a write the stop cut.
NOISE = ("Traceback", "\tat ", "at org.", "at java.", "py4j", "Py4J", "Exception occurred",
         "BrokenPipeError", "Connection refused", "warning:")


@dataclass
class Stopped:
    """A ``deltasink`` command stopped by a signal.

    Attributes:
        done: its exit code and output.
        children: the command names of the processes it ran below it.
        left: the processes below it that outlived it by 60 s (none, when the JVM follows).
    """

    done: subprocess.CompletedProcess[str]
    children: set[str] = field(default_factory=set)
    left: dict[int, str] = field(default_factory=dict)

    def tail(self) -> str:
        """The end of its output, for an assertion's message."""
        done = self.done
        return f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def stop_after_first_batch(args: list[str], checkpoints: list[Path], sig: signal.Signals,
                           group: bool, timeout: float = 1200) -> Stopped:
    """Run ``deltasink <args>``; once a checkpoint of ``checkpoints`` has a committed micro-batch
    (Spark's ``commits/0``: the run is streaming), send ``sig`` to the process group (``group``)
    or to the process alone, and wait for it to end by itself."""
    children: set[str] = set()
    left: dict[int, str] = {}
    done = runner.deltasink(
        *args, kill_after=0.0, kill_with=sig, kill_group=group, left=left, children=children,
        kill_when=lambda: any((c / "commits" / "0").exists() for c in checkpoints),
        timeout=timeout)
    return Stopped(done, children, left)


def stopped_line(sig: signal.Signals) -> str:
    """The one line ``deltasink run`` ends with when ``sig`` stopped it."""
    word = "interrupted" if sig == signal.SIGINT else "terminated"
    return f"{word} ({sig.name}): stopped; the next run continues where this one stopped"


def noise(text: str) -> list[str]:
    """The lines of ``text`` that carry :data:`NOISE`."""
    return [line for line in text.splitlines() if any(bad in line for bad in NOISE)]
