"""A Spark Connect server that dies mid-run (issue 33 §3): the client stops in one line naming
``spark.remote`` with exit code 1, within the bounded wait, and a later run
lands everything exactly once.

Chaos, not ``make test``: it starts a Connect server of its own (the session one is shared, so
it must not be killed), and waits out the client's bounded retries (about a minute).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

#: Guards against a hang, not speed: the client's bounded wait is ~54 s, start-up ~30 s.
HANG = 300.0


def test_a_connect_server_killed_mid_run_stops_the_client_in_one_line_then_recovers(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    topic = f"connect-dies-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 3000, duplicate_rate=0.1,
                          poison_rate=0.01, seed=31)
    first = ConnectServer.start(tmp_path / "first.log")
    try:
        path = write_config(lake, broker.bootstrap_servers, topic, spark={"remote": first.url},
                            source={"max_records_per_batch": 100})
        cfg = load_config(path, environ={})
        second_commit = Path(cfg.target.path) / "_delta_log" / f"{2:020d}.json"
        env = {k: v for k, v in os.environ.items() if k not in ("DELTASINK_FAULT",
                                                                 "SPARK_REMOTE")}
        with open(tmp_path / "out", "w+") as out, open(tmp_path / "err", "w+") as err:
            client = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path),
                                       "--no-validate"], stdout=out, stderr=err, text=True,
                                      env=env, start_new_session=True)
            try:
                started = time.monotonic()
                while not second_commit.exists():
                    assert client.poll() is None, "the run ended before its second commit"
                    assert time.monotonic() - started < HANG, "no second commit: hung"
                    time.sleep(0.1)
                os.killpg(first.process.pid, signal.SIGKILL)  # the server's JVM, at once
                killed_at = time.monotonic()
                try:
                    code = client.wait(HANG)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"the client hung {HANG:.0f}s after its Connect server died")
                waited = time.monotonic() - killed_at
            finally:
                runner.killpg(client)  # type: ignore[arg-type]
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
    finally:
        first.stop()

    assert code == 1, stdout[-2000:] + stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "spark.remote" in last, stderr[-3000:]
    assert first.url in last, last
    print(f"client stopped {waited:.1f}s after the server died: {last}")

    # The later run: in this (classic) process, on the same tables and checkpoint. What it
    # proves is the state the killed run left; a second server would only cost a JVM.
    raw = yaml.safe_load(path.read_text())
    del raw["spark"]
    path.write_text(yaml.safe_dump(raw))
    run_pipeline(spark, load_config(path, environ={}), validate=False, progress=lambda _l: None)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
