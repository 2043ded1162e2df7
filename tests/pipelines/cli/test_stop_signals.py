"""A stop signalled to the whole process group of ``deltasink run`` (issue 46 §3), as
``kill -TERM -<pgid>``, systemd's control-group stop and a job cancel send it: the driver JVM
gets the signal too, and ignores it (``pipelines/runtime/signals.py``), so the run stops as for a
signal to it alone. The output is the run's own lines and one stop line, with no traceback, no
JVM stack trace and no Py4J line; the exit code is 143, and 0 for a continuous run, as
``deltasink run --help`` says; nothing is left running; a rerun lands every event once.

One scenario, three cold processes (an available-now run and a continuous one stopped by a group
SIGTERM, and a continuous one Ctrl-C'd alone: SIGINT to the process), shared by the
tests below; the full matrix (SIGINT and SIGTERM, the process or its group, single, group,
Spark Connect and continuous runs) is ``tests/chaos/test_bad_signals.py``.
"""

from __future__ import annotations

import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.configs import make_config, write_config
from tests.support.stops import Stopped, noise, stop_after_first_batch, stopped_line

#: ``make extended``. Its pieces are in ``make test``: a forked driver JVM ignoring stop signals
#: (tests/pipelines/runtime/test_signals.py) and py4j's quiet loggers (cli/test_quiet_py4j.py).
pytestmark = [pytest.mark.slow, pytest.mark.extended]


@dataclass
class Case:
    """One pipeline stopped by a group SIGTERM after its first batch."""

    config: PipelineConfig
    sent: ProduceSummary
    stopped: Stopped


def _stop(lake: Path, broker: EmbeddedBroker, *extra: str,
          sig: signal.Signals = signal.SIGTERM, group: bool = True) -> Case:
    lake.mkdir(parents=True)
    topic = f"stop-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 600, duplicate_rate=0.1,
                          poison_rate=0.01, seed=46)
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 100})
    config = load_config(path, environ={})
    stopped = stop_after_first_batch(["run", "--config", str(path), "--no-validate", *extra],
                                     [Path(config.checkpoint)], sig, group=group)
    # The rerun: the same pipeline (name, tables, checkpoint), the rest in one batch.
    return Case(make_config(lake, broker.bootstrap_servers, topic), sent, stopped)


class Cases:
    """The stopped runs, each started cold on first use and shared by the tests after it."""

    def __init__(self, root: Path, broker: EmbeddedBroker) -> None:
        self.root, self.broker, self.made = root, broker, dict[str, Case]()

    def __getitem__(self, trigger: str) -> Case:
        if trigger not in self.made:
            extra = () if trigger == "available-now" else ("--trigger", "continuous",
                                                          "--interval", "1s")
            how = {"sig": signal.SIGINT, "group": False} if trigger == "ctrl-c" else {}
            self.made[trigger] = _stop(self.root / trigger, self.broker, *extra, **how)
        return self.made[trigger]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory, broker: EmbeddedBroker) -> Cases:
    """An available-now run and a continuous run, each stopped by ``kill -TERM -<pgid>``."""
    return Cases(tmp_path_factory.mktemp("stops"), broker)


@pytest.mark.parametrize(("trigger", "code"), [("available-now", 143), ("continuous", 0)])
def test_a_group_sigterm_ends_the_run_in_one_line_with_the_documented_code(
        cases: Cases, trigger: str, code: int) -> None:
    stopped = cases[trigger].stopped
    assert "java" in stopped.children, stopped.children  # the group held a driver JVM
    assert stopped.done.returncode == code, stopped.tail()
    assert stopped.done.stderr.strip().splitlines() == [stopped_line(signal.SIGTERM)], \
        stopped.tail()
    assert not noise(stopped.done.stdout + stopped.done.stderr), stopped.tail()
    assert "interrupted: stopping after the current batch" in stopped.done.stdout, stopped.tail()
    assert not stopped.left, f"left running 60 s after it exited: {stopped.left}"


def test_a_ctrl_c_to_a_continuous_run_stops_its_query_between_two_spark_calls(
        cases: Cases) -> None:
    """SIGINT to the process alone (a scheduler, the soak): the command's handler, not PySpark's
    (which raised inside the Spark call the run waited in, so its query was never stopped), and
    the watch loop stops the query on its next turn."""
    stopped = cases["ctrl-c"].stopped
    assert stopped.done.returncode == 0, stopped.tail()
    assert stopped.done.stderr.strip().splitlines() == [stopped_line(signal.SIGINT)], \
        stopped.tail()
    assert not noise(stopped.done.stdout + stopped.done.stderr), stopped.tail()
    assert "interrupted: stopping after the current batch" in stopped.done.stdout, stopped.tail()
    assert not stopped.left, f"left running 60 s after it exited: {stopped.left}"


@pytest.mark.parametrize("trigger", ["available-now", "continuous", "ctrl-c"])
def test_after_a_stop_signal_the_next_run_lands_every_event_once(
        cases: Cases, spark: SparkSession, trigger: str) -> None:
    case = cases[trigger]
    run_pipeline(spark, case.config, validate=False, progress=lambda _line: None)
    verdict = check(spark, case.config, case.sent.event_ids, sum(case.sent.poison.values()))
    assert verdict.clean, verdict
