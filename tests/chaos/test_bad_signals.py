"""Ctrl-C (SIGINT) and SIGTERM during a run (issue 33 §3): the run stops with one line and exit
code 130 or 143 (``pipelines/cli/parser.py``'s EPILOG), no traceback (PySpark's Ctrl-C
handler breaks the Py4J call it interrupts, and Py4J logged that with a traceback), no JVM left
behind, and a later run lands everything exactly once.

Chaos, not ``make test``: each case is a cold ``deltasink`` process (its own driver JVM), which
is the point: the signal must reach a real process with a real JVM below it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

#: Guards against a hang, not speed (a cold run on a loaded two-core machine).
HANG = 300.0


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.parametrize(("sig", "group", "code", "word"), [
    (signal.SIGINT, True, 130, "interrupted (SIGINT)"),    # Ctrl-C: the terminal's whole group
    (signal.SIGTERM, False, 143, "terminated (SIGTERM)"),  # a scheduler: the process only
], ids=["ctrl-c", "sigterm"])
def test_a_signal_mid_run_stops_after_the_batch_in_one_line_and_the_next_run_lands_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, sig: signal.Signals,
        group: bool, code: int, word: str) -> None:
    topic = f"signal-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 1500, duplicate_rate=0.1,
                          poison_rate=0.01, seed=41)
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 50})
    cfg = load_config(path, environ={})
    first_commit = Path(cfg.checkpoint) / "commits" / "0"
    env = {k: v for k, v in os.environ.items() if k not in ("DELTASINK_FAULT", "SPARK_REMOTE")}
    client = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, start_new_session=True)
    try:
        started = time.monotonic()
        while not first_commit.exists():
            assert client.poll() is None, client.communicate()
            assert time.monotonic() - started < HANG, "no first batch: hung"
            time.sleep(0.1)
        below = runner.descendants(client.pid)  # the driver JVM and its helpers
        (os.killpg if group else os.kill)(client.pid, sig)
        try:
            out, err = client.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            pytest.fail(f"deltasink hung {HANG:.0f}s after {sig.name}")
        deadline = time.monotonic() + 60  # the JVM follows its Python parent out
        while (left := {p: n for p, n in below.items() if alive(p)}) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        runner.killpg(client)  # type: ignore[arg-type]

    assert client.returncode == code, out[-2000:] + err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last == f"{word}: stopped; the next run continues where this one stopped", err[-3000:]
    assert not left, f"left running 60 s after exit: {left}"

    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
