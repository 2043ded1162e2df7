"""Retry a whole micro-batch when the cluster lost the blocks it was built on.

A batch is materialized once (:mod:`pipelines.sink.materialize`): its blocks live on the executors
that computed them. When one of those executors dies (a SIGKILL, a spot reclaim, an OOM), the
blocks go with it and the next job over them fails with "Checkpoint block ... not found" (or a
lost-executor / fetch failure). Spark's own task retries cannot help: a local checkpoint has no
lineage to recompute from. The batch DataFrame that ``foreachBatch`` received still has it (the
Kafka source re-reads the same planned offsets), so deltasink re-runs the whole batch body.

Why a re-run is exactly-once: every commit in the body is txn-guarded on (app id, batch id) and
insert-only on its key. A commit that landed before the failure is skipped on the re-run, and the
skip is proven against the planned offsets like any replay; one that did not land runs afresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How many times a batch is re-run after losing its blocks before the run fails.
BATCH_ATTEMPTS = 3
#: Substrings of a Spark failure that mean "the blocks or the executor went away", not "the
#: data or the code is wrong". Anything else is raised at once.
LOST_BLOCK_SIGNS = (
    "Checkpoint block",            # a localCheckpoint block whose executor is gone
    "ExecutorLostFailure",         # a task aborted because its executor died
    "FetchFailed",                 # a shuffle block on a dead executor
    "executor lost",
)


def lost_blocks(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) says executor blocks were lost.

    Args:
        exc: the failure raised while processing a batch.

    Returns:
        True for a lost executor or lost blocks, which a whole-batch re-run can heal.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current)
        if any(sign.lower() in text.lower() for sign in LOST_BLOCK_SIGNS):
            return True
        current = current.__cause__ or current.__context__
    return False


def run_batch_with_retry(body: Callable[[int], T], batch_id: int, *,
                         say: Callable[[str], None], attempts: int = BATCH_ATTEMPTS,
                         pause: float = 2.0,
                         sleep: Callable[[float], None] = time.sleep) -> T:
    """Run ``body(attempt)`` and re-run it whole when executor blocks were lost.

    Args:
        body: the batch body; it takes the attempt number (1-based).
        batch_id: named in the progress line.
        say: prints one line per retry.
        attempts: the most runs in all.
        pause: seconds before a re-run (lets the cluster replace the executor); doubles.
        sleep: injectable for tests.

    Returns:
        What ``body`` returned.

    Raises:
        Exception: the body's own failure, at once when it is not a lost block, or after the
            last attempt.
    """
    for attempt in range(1, attempts + 1):
        try:
            return body(attempt)
        except Exception as exc:
            if attempt == attempts or not lost_blocks(exc):
                raise
            first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc)
            say(f"batch {batch_id}: an executor was lost with the batch's blocks ({first}); "
                f"re-running the batch (attempt {attempt + 1} of {attempts})")
            sleep(pause * 2 ** (attempt - 1))
    raise AssertionError("unreachable")
