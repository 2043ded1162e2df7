"""A group run: several pipelines' available-now streams in one Spark session.

A data team lands tens of topics. Run one at a time, each pays its own cold start (the driver
JVM, the JIT's warm-up, Delta's first snapshots); run in one session, the group pays it once.

Each pipeline keeps everything it has alone: its lease, checkpoint, txn app id, run metrics,
validation and quarantine, and a session of its own
(:func:`pipelines.runtime.sessions.own_session`: the same JVM and warm JIT, its own settings), so
that one pipeline's txn settings can never reach another's commit. Up to ``parallel`` streams
run at once, each on a thread of its own. Validations run one at a time (Great Expectations is
not known to be thread-safe), beside the streams still running. One pipeline's failure (bad
auth, a missing topic, a failed validation) is that pipeline's outcome: it never stops the
others, and the others' commits are theirs alone.

The bookkeeping tables the pipelines share (verdicts, run metrics) are written once for the
group, when every pipeline has ended: one keyed MERGE per table (``quality/group_book.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.query import Progress
from pipelines.run import run_pipeline
from pipelines.runtime.sessions import own_session
from pipelines.runtime.signals import SIGNALS
from pipelines.sink.metrics import RunResult


@dataclass(frozen=True)
class Outcome:
    """What one pipeline of a group run did.

    Attributes:
        name: the pipeline's name.
        seconds: from its start to its end (its stream, then its validation).
        result: its batches and totals; None if it failed before its stream ended.
        error: what stopped it (None: it landed, and passed validation if it ran).
        validated: whether its validation ran and passed.
    """

    name: str
    seconds: float
    result: RunResult | None = None
    error: BaseException | None = None
    validated: bool = False


def run_group(spark: SparkSession, configs: Sequence[PipelineConfig], *, parallel: int = 2,
              validate: bool = True, progress: Progress | None = None) -> list[Outcome]:
    """Run each pipeline's available-now stream, up to ``parallel`` at once, in ``spark``.

    Args:
        spark: the group's session; each pipeline runs on a session of its own beside it.
        configs: the pipelines, each with its own name and checkpoint.
        parallel: how many streams run at once (at least 1).
        validate: validate each pipeline after its stream, as ``deltasink run`` does.
        progress: receives every pipeline's lines, each prefixed with ``[name]``.

    Returns:
        One outcome per config, in the order given. Never raises for one pipeline's failure;
        a stop signal (Ctrl-C, SIGTERM) stops every stream after its current batch. A pipeline
        whose verdict could not be recorded has that as its error.
    """
    from quality.group_book import GroupBook

    say = progress or print
    seen = len(SIGNALS)  # a signal before this group (a notebook's interrupt) is not its stop

    def stopped() -> bool:
        return len(SIGNALS) > seen

    book = GroupBook()
    printing = threading.Lock()  # one whole line at a time
    validating = threading.Lock()  # one validation at a time
    sessions: list[SparkSession] = []

    def prefixed(name: str) -> Progress:
        def line(text: str) -> None:
            with printing:
                say(f"[{name}] {text}")
        return line

    def member(config: PipelineConfig) -> Outcome:
        started = time.monotonic()
        tell = prefixed(config.name)
        result = None
        try:
            if stopped():  # stopped before this one began: it is left for the next run
                raise KeyboardInterrupt
            session = own_session(spark)
            sessions.append(session)
            result = run_pipeline(session, config, validate=False, progress=tell,
                                  metrics_to=book.metrics_of(config), stopping=stopped)
            if stopped():  # its stream was stopped: the next run continues it
                raise KeyboardInterrupt
            if validate and config.quality.enabled:
                from quality.cadence import validate_run

                with validating:
                    validate_run(session, config, result, tell, record=book.verdicts_of(config))
                return Outcome(config.name, time.monotonic() - started, result, validated=True)
            return Outcome(config.name, time.monotonic() - started, result)
        except (Exception, KeyboardInterrupt) as exc:
            return Outcome(config.name, time.monotonic() - started, result, error=exc)

    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="deltasink-group")
    futures = [pool.submit(member, config) for config in configs]
    try:
        outcomes = [future.result() for future in futures]
    except KeyboardInterrupt:  # the main thread: stop every stream, then collect the outcomes
        for session in list(sessions):
            for query in session.streams.active:
                query.stop()
        outcomes = [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    unrecorded = book.write(spark, say)
    return [replace(o, error=unrecorded[o.name], validated=False)
            if o.name in unrecorded and o.error is None else o for o in outcomes]
