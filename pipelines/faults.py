"""A test-only fault hook: crash the process at a named point, as SIGKILL would.

Set ``DELTASINK_FAULT=<point>[@<batch id>][,...]``. Points: ``before_quarantine_commit``,
``after_quarantine_commit``, ``before_target_commit``, ``after_target_commit`` (after the Delta
commit, before Spark commits the checkpoint) and ``during_validation``; for ``deltasink quarantine
redrive``, ``before_redrive_commit`` (before its target MERGE commits) and ``after_redrive_commit``
(after it, before the quarantine rows are marked redriven); ``during_lease_renewal`` (the first
renewal of the checkpoint lease empties the lease file, then the process dies, as a kill in the
middle of the rewrite would leave it). Unset, it does nothing.

Two settings simulate a second machine for the single-writer tests: ``lease_host=<name>`` (the
host name this process's checkpoint lease carries) and ``skip_lease_acquire`` (a writer on a
store where it cannot see the other's lease).

``pause_in_batch=<folder>[@<batch id>]`` holds each batch (or only that one) after its first
materialization until ``<folder>/go`` exists, having written ``<folder>/ready-<batch id>``: a
test can then act (SIGKILL an executor, RESTORE the table) while the batch is in flight.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from pipelines.config import env

FAULT_ENV = env.FAULT
POINTS = ("before_quarantine_commit", "after_quarantine_commit", "before_target_commit",
          "after_target_commit", "during_validation", "before_redrive_commit",
          "after_redrive_commit", "during_lease_renewal")


def should_crash(point: str, batch_id: int | None, spec: str | None) -> bool:
    """Whether ``spec`` asks for a crash at ``point`` (and at ``batch_id``, if it names one)."""
    for item in (spec or "").split(","):
        name, _, at = item.strip().partition("@")
        if name == point and (not at or (batch_id is not None and int(at) == batch_id)):
            return True
    return False


def armed(point: str) -> bool:
    """Whether ``DELTASINK_FAULT`` names ``point`` (at any batch)."""
    return should_crash(point, None, env.setting(FAULT_ENV))


def maybe_crash(point: str, batch_id: int | None = None) -> None:
    """Kill this process with SIGKILL if ``DELTASINK_FAULT`` names ``point``."""
    if should_crash(point, batch_id, env.setting(FAULT_ENV)):
        sys.stderr.write(f"deltasink: injected fault at {point} (batch {batch_id})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def setting(name: str) -> str | None:
    """The value of ``name=value`` in ``DELTASINK_FAULT`` ("1" for a bare ``name``), or None."""
    for item in (env.setting(FAULT_ENV) or "").split(","):
        key, sep, value = item.strip().partition("=")
        if key == name:
            return value if sep else "1"
    return None


def maybe_pause(batch_id: int, timeout: float = 300.0) -> None:
    """Hold the batch while ``pause_in_batch=<folder>[@<batch>]`` names it and ``go`` is missing."""
    folder, _, at = (setting("pause_in_batch") or "").partition("@")
    if not folder or (at and int(at) != batch_id) or (Path(folder) / "go").exists():
        return
    (Path(folder) / f"ready-{batch_id}").write_text(str(os.getpid()))
    deadline = time.monotonic() + timeout
    while not (Path(folder) / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
