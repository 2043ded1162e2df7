"""A group run (issue 35 §1): several pipelines in one Spark session, each landed exactly once,
each failure its own line, the exit code the worst of theirs.

The pipelines are the bundle's own (``notebooks/pipelines.d``), copied with the example schema
they name into a temporary folder so that their ``../../lake`` lands there, with their topics
and broker swapped for this test's.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.cli.group import GROUP_DIR, worst
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import ensure_topic
from pipelines.runtime.connect_server import ConnectServer
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


def test_run_all_lands_each_pipeline_once_and_a_failing_one_stops_no_other(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = broker.bootstrap_servers
    folder, topics = copy_group(tmp_path, bootstrap)
    # No poison: orders_bronze's suite allows 1% quarantined (its own tests cover the quarantine).
    orders = produce_events(bootstrap, topics["orders_bronze"], 120, duplicate_rate=0.2, seed=41)
    lines = produce_lines(bootstrap, topics["order_lines"], 0, 80)
    bronze = load_config(folder / "orders_bronze.yml", environ={})
    order_lines = load_config(folder / "order_lines.yml", environ={})

    capsys.readouterr()
    code = main(["run", "--all", str(folder)])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]
    assert err == "", err[-3000:]
    assert "group: 2 pipelines, up to 2 at a time, in one Spark session" in out
    assert re.search(r"^orders_bronze: ok in \d+s: \d+ batches, in=\d+ inserted=120 "
                     r"quarantined=\d+; validation passed$", out, re.M), out[-3000:]
    assert re.search(r"^order_lines: ok in \d+s: \d+ batches, in=160 inserted=80 "
                     r"quarantined=0; validation passed$", out, re.M), out[-3000:]
    assert out.rstrip().endswith("group: 2 pipelines, 2 ok, 0 failed")
    assert "[orders_bronze] run " in out and "[order_lines] run " in out  # prefixed progress

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

    verdict = check(spark, bronze, [*orders.event_ids, *more.event_ids],
                    sum(orders.poison.values()))
    assert verdict.clean, verdict
    landed = line_keys(spark, order_lines)
    assert len(landed) == len(set(landed)) == 100 and set(landed) == lines


def test_a_group_through_spark_connect_lands_each_pipeline_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        connect_server: ConnectServer) -> None:
    """The same group through Spark's own Connect server (``spark.remote``): each pipeline on a
    Connect session of its own, in a client process that starts no JVM."""
    bootstrap = broker.bootstrap_servers
    paths, configs, sent = [], [], []
    for name in ("north", "south"):
        topic = f"{name}-{uuid.uuid4().hex[:8]}"
        sent.append(produce_events(bootstrap, topic, 90, duplicate_rate=0.2, poison_rate=0.05,
                                   seed=len(name), id_prefix=name))
        paths.append(write_config(
            lake, bootstrap, topic, name=name, source={"max_records_per_batch": 40},
            target={"path": str(lake / name), "quarantine_path": str(lake / f"{name}_q")},
            spark={"remote": connect_server.url}))
        configs.append(load_config(paths[-1], environ={}))
    children: set[str] = set()
    done = runner.deltasink("run", *[a for p in paths for a in ("--config", str(p))],
                            "--no-validate", children=children)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "java" not in children, children
    assert done.stdout.rstrip().endswith("group: 2 pipelines, 2 ok, 0 failed"), done.stdout
    for cfg, events in zip(configs, sent, strict=True):
        verdict = check(spark, cfg, events.event_ids, sum(events.poison.values()))
        assert verdict.clean, (cfg.name, verdict)
