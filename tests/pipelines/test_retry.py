"""The whole-batch re-run after a lost executor: which failures qualify, and how often."""

from __future__ import annotations

import pytest

from pipelines.sink.retry import lost_blocks, run_batch_with_retry

LOST = ("Job aborted due to stage failure: Task 1 in stage 7.0 failed 4 times: "
        "org.apache.spark.SparkException: Checkpoint block rdd_31_1 not found! Either the "
        "executor that originally checkpointed this partition is no longer alive, or ...")


def test_lost_blocks_recognises_a_lost_checkpoint_block_and_a_lost_executor() -> None:
    assert lost_blocks(RuntimeError(LOST))
    assert lost_blocks(RuntimeError("ExecutorLostFailure (executor 1 exited) Reason: 137"))
    assert lost_blocks(RuntimeError("org.apache.spark.shuffle.FetchFailedException: ..."))


def test_lost_blocks_looks_through_wrapping_exceptions() -> None:
    try:
        try:
            raise RuntimeError(LOST)
        except RuntimeError as inner:
            raise ValueError("foreachBatch failed") from inner
    except ValueError as outer:
        assert lost_blocks(outer)


def test_lost_blocks_refuses_data_and_code_errors() -> None:
    assert not lost_blocks(RuntimeError("[INVALID_ATTRIBUTE_NAME_SYNTAX] ..."))
    assert not lost_blocks(ValueError("multiple source rows matched"))


def test_a_batch_that_lost_its_blocks_is_rerun_and_the_rerun_is_announced() -> None:
    calls: list[int] = []
    lines: list[str] = []

    def body(attempt: int) -> str:
        calls.append(attempt)
        if attempt == 1:
            raise RuntimeError(LOST)
        return "landed"

    assert run_batch_with_retry(body, 4, say=lines.append, sleep=lambda _s: None) == "landed"
    assert calls == [1, 2]
    assert len(lines) == 1 and lines[0].startswith("batch 4: an executor was lost")


def test_other_failures_are_raised_at_once_and_retries_are_bounded() -> None:
    calls: list[int] = []

    def wrong(attempt: int) -> None:
        calls.append(attempt)
        raise ValueError("multiple source rows matched")

    with pytest.raises(ValueError):
        run_batch_with_retry(wrong, 0, say=lambda _l: None, sleep=lambda _s: None)
    assert calls == [1]

    def always_lost(attempt: int) -> None:
        calls.append(attempt)
        raise RuntimeError(LOST)

    calls.clear()
    with pytest.raises(RuntimeError, match="Checkpoint block"):
        run_batch_with_retry(always_lost, 0, say=lambda _l: None, attempts=3,
                             sleep=lambda _s: None)
    assert calls == [1, 2, 3]
