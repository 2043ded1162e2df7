"""The retry of a streaming query's start whose ``foreachBatch`` worker on the Spark Connect
server did not connect back within Spark's fixed 10 s (pure logic: the start is a thin fake that
raises what the server's error reads like)."""

from __future__ import annotations

import pytest

from pipelines.runtime.connect_client import WORKER_START_ATTEMPTS, start_query

LATE = ("[PYTHON_WORKER_ERROR] org.apache.spark.SparkException: Python worker failed to "
        "connect back.")


class Starts:
    """A start that fails with each of ``errors`` in turn, then returns ``"query"``."""

    def __init__(self, *errors: Exception) -> None:
        self.errors, self.calls = list(errors), 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "query"


def test_a_late_worker_is_started_again_and_said_once_per_retry(
        capsys: pytest.CaptureFixture[str]) -> None:
    start = Starts(RuntimeError(LATE))
    assert start_query(start, "pipeline orders") == "query"
    assert start.calls == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("deltasink: pipeline orders: the Spark "
                                                   "Connect server's foreachBatch worker"), err
    assert f"(2/{WORKER_START_ATTEMPTS})" in err


def test_any_other_failure_is_raised_at_once() -> None:
    start = Starts(RuntimeError("SparkConcurrentModificationException"))
    with pytest.raises(RuntimeError, match="Concurrent"):
        start_query(start, "pipeline orders")
    assert start.calls == 1


def test_a_worker_late_every_time_fails_after_the_last_attempt() -> None:
    start = Starts(*(RuntimeError(LATE) for _ in range(WORKER_START_ATTEMPTS)))
    with pytest.raises(RuntimeError, match="failed to connect back"):
        start_query(start, "replay r1")
    assert start.calls == WORKER_START_ATTEMPTS
