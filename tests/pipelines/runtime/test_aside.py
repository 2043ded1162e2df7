"""Side work a run waits for before it ends (the final metrics write beside the validation)."""

from __future__ import annotations

import threading
import time

import pytest

from pipelines.runtime.aside import Aside


def test_work_runs_beside_the_caller_and_is_waited_for_on_exit() -> None:
    started, go, done = threading.Event(), threading.Event(), []

    def work(tag: str) -> None:
        started.set()
        go.wait(10)
        done.append(tag)

    with Aside() as aside:
        aside.start("t", work, "metrics")
        assert started.wait(10) and done == []  # the caller went on while it runs
        go.set()
    assert done == ["metrics"]


def test_exit_waits_for_the_work_even_when_the_run_fails() -> None:
    done: list[str] = []

    def slow_write() -> None:
        time.sleep(0.5)  # still writing when the failure leaves the block
        done.append("written")

    with pytest.raises(RuntimeError), Aside() as aside:
        aside.start("t", slow_write)
        raise RuntimeError("the validation failed")
    assert done == ["written"]
