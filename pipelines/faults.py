"""A test-only fault hook: crash the process at a named point, as SIGKILL would.

Set ``DELTASINK_FAULT=<point>[@<batch id>][,...]``. The micro-batch carries the spec it was
started with (:func:`current_spec`, passed as ``spec``): under Spark Connect the batch runs in a
worker beside the server, whose environment is not the client's, and a crash point there kills
the worker (the batch's process), as a lost driver would. Points: ``before_quarantine_commit``,
``after_quarantine_commit``, ``before_target_commit`` (before each of the target's commits, a
mode's side writes included), ``after_side_commit`` (after a mode's side write: a replica's
deletes, a history's changes; before the target's commit), ``after_target_commit`` (after the
Delta commit, before Spark commits the checkpoint) and ``during_validation``; for ``deltasink
quarantine redrive``, ``before_redrive_commit`` (before its target MERGE commits) and
``after_redrive_commit`` (after it, before the quarantine rows are marked redriven);
``during_lease_renewal`` (the first renewal of the checkpoint lease kills the process before its
update commits). Unset, it does nothing.

Two settings simulate a second machine for the single-writer tests: ``lease_host=<name>`` (the
host name this process's checkpoint lease carries) and ``skip_lease_acquire`` (a writer on a
store where it cannot see the other's lease).

``kill_at_registration=<table>`` (classic sessions only) kills the process inside Delta's
``CREATE TABLE`` of the catalog table ``<table>`` (its last name part): after Delta committed the
table's first log entry, before the metastore registers the name, as a kill in that window does
(:func:`arm_registration_kill`; ``pipelines/storage/catalog.py`` rides out what it leaves).

``no_local_checkpoint`` makes a batch act as if its session refused local checkpoints (as
serverless does): it is staged in a Delta table instead (``pipelines/sink/materialize.py``).

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
          "after_side_commit", "after_target_commit", "during_validation", "before_redrive_commit",
          "after_redrive_commit", "during_lease_renewal")


def should_crash(point: str, batch_id: int | None, spec: str | None) -> bool:
    """Whether ``spec`` asks for a crash at ``point`` (and at ``batch_id``, if it names one)."""
    for item in (spec or "").split(","):
        name, _, at = item.strip().partition("@")
        if name == point and (not at or (batch_id is not None and int(at) == batch_id)):
            return True
    return False


def current_spec() -> str | None:
    """This process's ``DELTASINK_FAULT``, for a batch to carry to wherever it runs."""
    return env.setting(FAULT_ENV)


def maybe_crash(point: str, batch_id: int | None = None, spec: str | None = None) -> None:
    """Kill this process with SIGKILL if the spec (default ``DELTASINK_FAULT``) names ``point``."""
    if should_crash(point, batch_id, spec if spec is not None else env.setting(FAULT_ENV)):
        sys.stderr.write(f"deltasink: injected fault at {point} (batch {batch_id})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def setting(name: str, spec: str | None = None) -> str | None:
    """The value of ``name=value`` in the spec (default ``DELTASINK_FAULT``; "1" for a bare
    ``name``), or None."""
    for item in (spec if spec is not None else env.setting(FAULT_ENV) or "").split(","):
        key, sep, value = item.strip().partition("=")
        if key == name:
            return value if sep else "1"
    return None


def maybe_pause(batch_id: int, timeout: float = 300.0, spec: str | None = None) -> None:
    """Hold the batch while ``pause_in_batch=<folder>[@<batch>]`` names it and ``go`` is missing."""
    folder, _, at = (setting("pause_in_batch", spec) or "").partition("@")
    if not folder or (at and int(at) != batch_id) or (Path(folder) / "go").exists():
        return
    (Path(folder) / f"ready-{batch_id}").write_text(str(os.getpid()))
    deadline = time.monotonic() + timeout
    while not (Path(folder) / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def arm_registration_kill(spark: object, spec: str | None = None) -> None:
    """Under ``kill_at_registration=<table>``, SIGKILL this process when the session's metastore
    is asked to register ``<table>`` (Spark's ``CreateTablePreEvent``, sent synchronously to the
    external catalog's listeners). Test-only; a no-op without the setting or on Spark Connect."""
    table = setting("kill_at_registration", spec)
    jsession = getattr(spark, "_jsparkSession", None)
    if not table or jsession is None:
        return
    from pyspark.java_gateway import ensure_callback_server_started

    class KillAtRegistration:
        def onEvent(self, event: object) -> None:  # the Java interface's method
            kind = event.getClass().getSimpleName()  # type: ignore[attr-defined]
            if kind == "CreateTablePreEvent" and event.name() == table:  # type: ignore[attr-defined]
                maybe_crash("kill_at_registration", spec="kill_at_registration")

        class Java:
            implements = ("org.apache.spark.sql.catalyst.catalog.ExternalCatalogEventListener",)

    ensure_callback_server_started(spark.sparkContext._gateway)  # type: ignore[attr-defined,no-untyped-call]
    jsession.sharedState().externalCatalog().addListener(KillAtRegistration())
