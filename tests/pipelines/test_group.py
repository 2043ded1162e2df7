"""A group run (issue 35 §1): several pipelines in one Spark session, each landed exactly once,
each failure its own line, the exit code the worst of theirs.

The pipelines are the bundle's own (``notebooks/pipelines.d``), copied with the example schema
they name into a temporary folder so that their ``../../lake`` lands there, with their topics
and broker swapped for this test's.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from pipelines.cli import main
from pipelines.cli.group import GROUP_DIR, worst
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import ensure_topic
from pipelines.ledger.deltalog import LogCommit
from pipelines.runtime.connect_server import ConnectServer
from quality.metrics_log import stamped
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config
from tests.support.orders import encode, order

ROOT = Path(__file__).resolve().parents[2]


def copy_group(root: Path, bootstrap: str) -> tuple[Path, dict[str, str]]:
    """``notebooks/pipelines.d`` and ``schemas/examples`` under ``root``, on ``bootstrap`` and
    topics of their own; returns the folder and each pipeline's topic."""
    folder = root / GROUP_DIR
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "schemas" / "examples", root / "schemas" / "examples")
    topics = {}
    for file in sorted((ROOT / GROUP_DIR).glob("*.yml")):
        text = file.read_text()
        old = re.search(r"topics: \[(\w+)\]", text)
        assert old is not None, file
        topics[file.stem] = f"{old.group(1)}-{uuid.uuid4().hex[:8]}"
        text = text.replace(old.group(0), f"topics: [{topics[file.stem]}]")
        text = text.replace("bootstrap_servers: 127.0.0.1:9092", f"bootstrap_servers: {bootstrap}")
        (folder / file.name).write_text(text)
    assert set(topics) == {"orders_bronze", "order_lines"}, topics
    return folder, topics


def produce_lines(bootstrap: str, topic: str, first: int, count: int) -> set[tuple[str, int]]:
    """Order lines ``first``..``first+count`` (four per order), each sent twice; their keys."""
    ensure_topic(bootstrap, topic, partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap})
    keys = set()
    for i in range(first, first + count):
        record = order(f"o-{i // 4}", i % 4 + 1)
        keys.add((record["order_id"], record["line_no"]))
        for _copy in range(2):
            producer.produce(topic, value=encode(record), key=b"k",
                             headers=[("trace-id", f"t-{i}".encode())])
    assert producer.flush(30) == 0
    return keys


def line_keys(spark: SparkSession, config: PipelineConfig) -> list[tuple[str, int]]:
    return [(r["order_id"], r["line_no"]) for r in config.target.ref.read(spark).collect()]


def test_the_worst_exit_code_wins() -> None:
    assert worst([0, 3, 0]) == 3 and worst([3, 1]) == 1 and worst([1, 2, 0]) == 2
    assert worst([]) == 0


def history(spark: SparkSession, ref_path: str | None) -> list[Row]:
    """A path table's commits, oldest first."""
    return spark.sql(f"DESCRIBE HISTORY delta.`{ref_path}`").orderBy("version").collect()


@pytest.mark.extended
def test_run_all_lands_each_pipeline_once_and_a_failing_one_stops_no_other(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = broker.bootstrap_servers
    folder, topics = copy_group(tmp_path, bootstrap)
    # orders_bronze's suite allows 1% quarantined: 5% poison fails its validation, and only its.
    orders = produce_events(bootstrap, topics["orders_bronze"], 120, duplicate_rate=0.2,
                            poison_rate=0.05, seed=41)
    lines = produce_lines(bootstrap, topics["order_lines"], 0, 80)
    bronze = load_config(folder / "orders_bronze.yml", environ={})
    order_lines = load_config(folder / "order_lines.yml", environ={})

    capsys.readouterr()
    code = main(["run", "--all", str(folder)])
    out, err = capsys.readouterr()
    assert code == 3, out[-3000:] + err[-3000:]  # a failed validation's code
    assert re.fullmatch(r"orders_bronze: exit 3 after \d+s: data quality check failed: validation "
                        r"failed for run \w+; see the failing expectations above\n", err), err
    assert "group: 2 pipelines, up to 2 at a time, in one Spark session" in out
    assert re.search(r"^order_lines: ok in \d+s: \d+ batches, in=160 inserted=80 "
                     r"quarantined=0; validation passed$", out, re.M), out[-3000:]
    assert out.rstrip().endswith("group: 2 pipelines, 1 ok, 1 failed")
    assert "[orders_bronze] run " in out and "[order_lines] run " in out  # prefixed progress

    # The verdicts, the failed one too, went in as one commit for both pipelines.
    results = bronze.quality.results_ref
    assert results == order_lines.quality.results_ref
    assert f"group: the verdicts of 2 pipelines recorded in {results.describe()}, one commit" in out
    assert [c["operation"] for c in history(spark, results.path)] == ["CREATE TABLE", "MERGE"]
    verdicts = results.read(spark).groupBy("pipeline").agg(
        F.min(F.col("success").cast("int")).alias("passed")).collect()
    assert {(r["pipeline"], r["passed"]) for r in verdicts} == {("orders_bronze", 0),
                                                                 ("order_lines", 1)}
    # orders_bronze's run-metrics rows, the group's one MERGE; order_lines (quality.max_staleness
    # reads its rows) wrote its own before it validated. One row per batch, each once.
    metrics = bronze.quality.metrics_ref
    merges = [c for c in history(spark, metrics.path) if c["operation"] == "MERGE"]
    assert len(merges) == 1, merges
    rows = metrics.read(spark).where("pipeline = 'orders_bronze'").collect()
    keys = {(r["query_id"], r["batch_id"]) for r in rows}
    assert len(rows) == len(keys) > 0
    mark = LogCommit(0, merges[0]["timestamp"], "MERGE", {}, merges[0]["userMetadata"])
    assert stamped(mark, "orders_bronze") == keys
    assert metrics.read(spark).where("pipeline = 'order_lines'").count() > 0

    # Again, with more events and two pipelines that fail: a topic that does not exist, and a
    # config that does not parse. The two good ones land; each failure is one line.
    more = produce_events(bootstrap, topics["orders_bronze"], 30, seed=42, id_prefix="more")
    lines |= produce_lines(bootstrap, topics["order_lines"], 80, 20)
    missing = write_config(tmp_path, bootstrap, f"missing-{uuid.uuid4().hex[:8]}", name="gamma",
                           target={"path": str(tmp_path / "gamma"),
                                   "quarantine_path": str(tmp_path / "gamma_quarantine")})
    broken = tmp_path / "broken.yml"
    broken.write_text("name: [unclosed\n")
    code = main(["run", "--config", str(folder / "orders_bronze.yml"),
                 "--config", str(folder / "order_lines.yml"), "--config", str(missing),
                 "--config", str(broken), "--parallel", "3", "--no-validate"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]  # the broken config's 2 is the worst
    errors = err.splitlines()
    assert len(errors) == 2 and "Traceback" not in err, err[-3000:]
    assert errors[0].startswith(f"{broken}: exit 2: error: "), errors
    assert re.match(r"gamma: exit 1 after \d+s: error: topic\(s\) missing-\w+ do not exist",
                    errors[1]), errors
    assert re.search(r"^orders_bronze: ok in \d+s: .* inserted=30 .*; not validated$", out,
                     re.M), out[-3000:]
    assert re.search(r"^order_lines: ok in \d+s: .* inserted=20 .*; not validated$", out,
                     re.M), out[-3000:]
    assert out.rstrip().endswith("group: 4 pipelines, 2 ok, 2 failed")
    # orders_bronze's rows in the group's write; order_lines (max_staleness) wrote its own.
    assert f"group: the run metrics of orders_bronze recorded in {metrics.describe()}, one " \
        "commit" in out, out[-3000:]

    verdict = check(spark, bronze, [*orders.event_ids, *more.event_ids],
                    sum(orders.poison.values()))
    assert verdict.clean, verdict
    landed = line_keys(spark, order_lines)
    assert len(landed) == len(set(landed)) == 100 and set(landed) == lines


@pytest.mark.extended
def test_the_bundles_group_through_spark_connect_lands_each_pipeline_once(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        connect_server: ConnectServer) -> None:
    """``SPARK_REMOTE=sc://... deltasink run --all`` on the bundle's pipelines, through Spark's
    own Connect server: each pipeline on a Connect session of its own, in a client process that
    starts no JVM, run from another folder."""
    bootstrap = broker.bootstrap_servers
    folder, topics = copy_group(tmp_path, bootstrap)
    orders = produce_events(bootstrap, topics["orders_bronze"], 90, duplicate_rate=0.2,
                            poison_rate=0.05, seed=7)
    lines = produce_lines(bootstrap, topics["order_lines"], 0, 40)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    children: set[str] = set()
    done = runner.deltasink("run", "--all", str(folder), "--no-validate", children=children,
                            env={**os.environ, "SPARK_REMOTE": connect_server.url},
                            cwd=elsewhere)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "java" not in children, children
    assert done.stdout.rstrip().endswith("group: 2 pipelines, 2 ok, 0 failed"), done.stdout
    # orders_bronze's run-metrics rows in the group's one write, through its Connect session.
    assert "group: the run metrics of orders_bronze recorded in " in done.stdout, done.stdout
    bronze = load_config(folder / "orders_bronze.yml", environ={})
    verdict = check(spark, bronze, orders.event_ids, sum(orders.poison.values()))
    assert verdict.clean, verdict
    landed = line_keys(spark, load_config(folder / "order_lines.yml", environ={}))
    assert len(landed) == len(set(landed)) == 40 and set(landed) == lines
