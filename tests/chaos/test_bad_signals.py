"""Ctrl-C (SIGINT) and SIGTERM during a run (issue 33 §3, issue 46 §3), to the ``deltasink``
process alone (a scheduler that signals its pid) or to its whole process group (a terminal's
Ctrl-C, ``kill -TERM -<pgid>``, systemd's control-group stop, a job cancel: the driver JVM too),
in a single run, a group run, a run through Spark Connect and a continuous run.

Each ends with the run's own lines and one stop line, no traceback, no JVM stack trace and no
Py4J line (``pipelines/cli/parser.py``'s EPILOG), exit 130 or 143 (0 for a continuous run),
nothing left running, and a rerun, in the same mode, that lands every event once.

Chaos, not ``make test``: each case is a cold ``deltasink`` process (its own driver JVM), which
is the point: the signal must reach a real process with a real JVM below it. The cheapest
decisive cases (a group SIGTERM to an available-now and to a continuous run) are in
``tests/pipelines/cli/test_stop_signals.py``.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.run import run_pipeline
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import make_config, write_config
from tests.support.stops import noise, stop_after_first_batch, stopped_line

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

MODES = ["single", "group", "connect", "continuous"]


def _pipeline(lake: Path, broker: EmbeddedBroker, name: str, seed: int,
              **overrides: object) -> tuple[Path, PipelineConfig, ProduceSummary]:
    lake.mkdir(parents=True, exist_ok=True)
    topic = f"signal-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 1500, duplicate_rate=0.1,
                          poison_rate=0.01, seed=seed)
    path = write_config(lake, broker.bootstrap_servers, topic, name=name,
                        source={"max_records_per_batch": 50}, **overrides)
    return path, load_config(path, environ={}), sent


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("group", [True, False], ids=["group", "process"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_stop_signal_mid_run_ends_in_one_line_and_the_next_run_lands_once(
        broker: EmbeddedBroker, lake: Path, request: pytest.FixtureRequest,
        sig: signal.Signals, group: bool, mode: str) -> None:
    remote: dict[str, object] = {}
    if mode == "connect":
        server: ConnectServer = request.getfixturevalue("connect_server")
        remote = {"spark": {"remote": server.url}}
    names = ["signal_a", "signal_b"] if mode == "group" else ["signal_a"]
    pipelines = [_pipeline(lake / name, broker, name, 41 + i, **remote)
                 for i, name in enumerate(names)]
    args = ["run", "--no-validate"] + [a for p in pipelines for a in ("--config", str(p[0]))]
    if mode == "continuous":
        args += ["--trigger", "continuous", "--interval", "1s"]

    stopped = stop_after_first_batch(args, [Path(p[1].checkpoint) for p in pipelines], sig,
                                     group)

    code = 0 if mode == "continuous" else 128 + sig
    assert stopped.done.returncode == code, stopped.tail()
    assert stopped.done.stderr.strip().splitlines() == [stopped_line(sig)], stopped.tail()
    assert not noise(stopped.done.stdout + stopped.done.stderr), stopped.tail()
    assert not stopped.left, f"left running 60 s after it exited: {stopped.left}"
    assert ("java" in stopped.children) == (mode != "connect"), stopped.children
    if mode != "group":  # its watch loop stopped the query (a group's main thread stops them all)
        assert "interrupted: stopping after the current batch" in stopped.done.stdout, \
            stopped.tail()
    if mode == "group":
        for name in names:  # each pipeline's own line: stopped (or landed), never a failure
            assert any(line.startswith((f"{name}: stopped after", f"{name}: ok in"))
                       for line in stopped.done.stdout.splitlines()), stopped.tail()

    spark: SparkSession = request.getfixturevalue("spark")
    for path, config, sent in pipelines:  # the rerun lands the rest in one batch
        config = make_config(path.parent, broker.bootstrap_servers, config.source.topics[0],
                             name=config.name, **remote)
        if mode == "connect":  # the rerun goes through the same server
            again = runner.run(path)
            assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
        else:
            run_pipeline(spark, config, validate=False, progress=lambda _l: None)
        verdict = check(spark, config, sent.event_ids, sum(sent.poison.values()))
        assert verdict.clean, verdict
