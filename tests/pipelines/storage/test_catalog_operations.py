"""The operator's commands on catalog tables, placed as the Databricks bundle places them, each
step a ``deltasink`` process (or the maintenance notebook in a process) from another folder, in
two catalogs (the module's scenario runs once in each):

- ``hive``: Spark's Hive metastore on embedded Derby (tests/support/hive.py), classic processes;
- ``connect``: the Spark Connect server's own catalog, every process a Connect client
  (``spark.remote``), the notebook's ``spark`` included.

The tables are read back at their locations by this test's own session, with the exactly-once
checker.

The scenario (make chaos: thirteen cold processes per catalog):

1. a run of an old producer's topic under ``events_v1`` (its legacy records quarantined), killed
   after batch 1's target commit, before Spark commits the batch (over Connect the kill takes
   the server's batch worker, and the client exits 1);
2. maintenance (OPTIMIZE, VACUUM, full validation: the bundle's maintenance notebook) of the
   tables that exist then (no verdict was recorded yet);
3. the rerun with validation: batch 1 is skipped as already committed, after the compaction;
   ``status`` reads it in sync;
4. ``report``, ``quarantine list``;
5. rows deleted behind deltasink's back, then ``replay``, which puts back only them;
6. the schema changed to ``events_v2``, ``quarantine redrive``: the legacy records land once;
7. a group run: new records of this pipeline, and an upsert pipeline on a topic of its own,
   one session, the bookkeeping tables shared by name;
8. maintenance again, now of all four tables;
9. ``rewind`` of the target to before the group run, and a run that lands those records again;
10. a planted duplicate, which ``validate --full`` fails with exit 3.
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from pipelines.config import env
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.databricks.widgets import place
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.ledger import state
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.checker import Verdict, check
from tests.support.connect_client import connect_schema_location, connect_sql
from tests.support.hive import CATALOG, SCHEMA, VOLUME, hive_conf, make_schema
from tests.support.upsert_model import (
    UPSERT,
    Version,
    make_versions,
    mismatches,
    produce_versions,
    replays,
)

pytestmark = [pytest.mark.slow, pytest.mark.chaos]
ROOT = Path(__file__).resolve().parents[3]
TABLES = ("orders", "orders_quarantine", "deltasink_quality_results", "deltasink_run_metrics")

_MAINTAIN = """
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession
from pipelines.runtime.spark import get_spark
from tests.support.dbutils import make_dbutils, run_notebook
how = json.loads(sys.argv[1])
spark = (SparkSession.builder.remote(how["remote"]).getOrCreate() if "remote" in how
         else get_spark(conf=how["conf"]))
done = run_notebook(Path(sys.argv[2]), make_dbutils(json.loads(sys.argv[3])), spark)
print(json.dumps(done["report"].actions))
"""


@dataclass(frozen=True)
class Catalog:
    """Where the scenario's catalog lives, and how its processes reach it."""

    mode: str  # "hive" or "connect"
    schema: str  # in CATALOG
    spark: dict[str, Any]  # every config's ``spark:`` section
    tables_at: Path  # the schema's folder: a managed table lies at ``tables_at / <table>``

    @property
    def prefix(self) -> str:
        return f"{CATALOG}.{self.schema}"

    def at(self, table: str) -> Path:
        return self.tables_at / table


def open_catalog(mode: str, root: Path, request: pytest.FixtureRequest) -> Catalog:
    """The schema, made as a user would (a process of its own), in the ``mode`` catalog."""
    if mode == "hive":
        make_schema(root)
        return Catalog(mode, SCHEMA, {"conf": hive_conf(root)},
                       root / "warehouse" / f"{SCHEMA}.db")
    server: ConnectServer = request.getfixturevalue("connect_server")
    schema = f"ops_{uuid.uuid4().hex[:8]}"  # the server is shared with other tests
    connect_sql(server.url, f"CREATE SCHEMA {CATALOG}.{schema}")
    schema_at = connect_schema_location(server.url, f"{CATALOG}.{schema}")
    return Catalog(mode, schema, {"remote": server.url}, Path(schema_at.removeprefix("file:")))


@dataclass
class Ops:
    """What the module's processes did, in order."""

    root: Path
    cwd: Path
    env: dict[str, str]
    user: dict[str, Any]
    sends: list[ProduceSummary]
    catalog: Catalog
    done: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    partitions: int = 0
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    quarantine: dict[str, int] = field(default_factory=dict)
    target_rows: int = 0
    deleted: list[str] = field(default_factory=list)
    redriven: int = 0
    versions: list[Version] = field(default_factory=list)
    upsert_mismatches: list[str] = field(default_factory=list)
    rewound_rows: int = 0
    killed_commits: set[int] = field(default_factory=set)

    def config(self, name: str) -> Path:
        return self.root / f"{name}.yml"


def by_path(catalog: Catalog, config: PipelineConfig) -> PipelineConfig:
    """``config`` with its target and quarantine read at their locations (this test's session
    knows neither catalog)."""
    target = config.target.model_copy(update={
        "table": None, "quarantine_table": None,
        "path": str(catalog.at(config.target.ref.name.split(".")[-1])),  # type: ignore[union-attr]
        "quarantine_path": str(catalog.at(
            config.target.quarantine_ref.name.split(".")[-1]))})  # type: ignore[union-attr]
    return config.model_copy(update={"target": target})


def write(root: Path, catalog: Catalog, raw: dict[str, Any]) -> Path:
    """The bundle's placement of ``raw`` in the catalog's schema and the local Volume."""
    placed = place(raw, CATALOG, catalog.schema, VOLUME, volumes_root=str(root / "Volumes"))
    path = root / f"{raw['name']}.yml"
    path.write_text(yaml.safe_dump(placed))
    return path


def num_files(spark: SparkSession, catalog: Catalog) -> dict[str, int]:
    """Each existing table's live data files (``DESCRIBE DETAIL``), at its location."""
    return {t: int(spark.sql(f"DESCRIBE DETAIL delta.`{catalog.at(t)}`").first()["numFiles"])  # type: ignore[index]
            for t in TABLES if (catalog.at(t) / "_delta_log").is_dir()}


def maintain(ops: Ops, user_config: Path) -> subprocess.CompletedProcess[str]:
    """The bundle's maintenance notebook, its widgets as the bundle sets them, in a process."""
    params = {"config": str(user_config), "catalog": CATALOG, "schema": ops.catalog.schema,
              "volume": VOLUME, "bootstrap_servers": "", "secret_scope": "",
              "retain_hours": "168"}
    return subprocess.run(
        [sys.executable, "-c", _MAINTAIN, json.dumps(ops.catalog.spark),
         str(ROOT / "notebooks" / "maintenance.py"), json.dumps(params)],
        capture_output=True, text=True, timeout=900, cwd=ROOT, env=ops.env)


def plotted(html: str) -> dict[str, list[Any]]:
    """Each trace of the report's charts, ``name -> y`` (the first trace of a name)."""
    traces: dict[str, list[Any]] = {}
    decoder = json.JSONDecoder()
    for found in re.finditer(r'Plotly\.newPlot\(\s*"[^"]+",\s*', html):
        data, _ = decoder.raw_decode(html, found.end())
        for trace in data:
            traces.setdefault(trace["name"], trace["y"])
    return traces


def latest_version(spark: SparkSession, at: Path) -> int:
    """The Delta table's newest version, read at its location."""
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{at}` LIMIT 1").first()["version"])  # type: ignore[index]


@pytest.fixture(scope="module", params=["hive", "connect"])
def ops(spark: SparkSession, broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory,
        request: pytest.FixtureRequest) -> Ops:
    root = tmp_path_factory.mktemp(f"{request.param}-ops")
    cwd = tmp_path_factory.mktemp(f"{request.param}-ops-cwd")
    catalog = open_catalog(request.param, root, request)
    bootstrap = broker.bootstrap_servers
    topic, latest_topic = (f"{request.param}-ops-{uuid.uuid4().hex[:8]}",
                           f"{request.param}-latest-{uuid.uuid4().hex[:8]}")
    started = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    # ~610 records at 200 a batch: four batches, the kill after batch 1 leaves two to come.
    sends = [produce_events(bootstrap, topic, 500, duplicate_rate=0.1, poison_rate=0.01,
                            legacy_rate=0.1, seed=48)]
    user = {"name": "orders", "schema": "events_v1",
            "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                       "max_records_per_batch": 200},
            "target": {"path": "lake/orders"}, "checkpoint": "lake/_checkpoints/orders",
            "quality": {"max_quarantine_ratio": 0.2},
            "spark": catalog.spark}
    environ = {**runner.cold_env(None), env.VOLUMES_ROOT: str(root / "Volumes")}
    o = Ops(root, cwd, environ, user, sends, catalog)
    config = write(root, catalog, user)
    user_path = root / "orders.user.yml"
    user_path.write_text(yaml.safe_dump(user))
    loaded = by_path(catalog, load_config(config, environ={}))
    legacy = list(sends[0].legacy_ids)
    poison = sum(sends[0].poison.values())
    target = catalog.at("orders")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return runner.deltasink(*args, "--config", str(config), env=environ, cwd=cwd)

    def verdict(extra: tuple[str, ...] = (), quarantined: int = poison + len(legacy)) -> Verdict:
        ids = [e for s in o.sends for e in s.event_ids] + list(extra)
        return check(spark, loaded, ids, quarantined)

    o.done["killed"] = runner.run(config, fault="after_target_commit@1", env=environ, cwd=cwd)
    o.killed_commits = {c.batch_id for c in
                        state.sink_commits(spark, loaded.target.ref, loaded.name)}
    o.files["before"] = num_files(spark, catalog)
    o.partitions = spark.read.format("delta").load(str(target)) \
        .select("event_date").distinct().count()
    o.done["maintain"] = maintain(o, user_path)
    o.files["after"] = num_files(spark, catalog)
    o.done["rerun"] = runner.run(config, validate=True, env=environ, cwd=cwd)
    o.verdicts["rerun"] = verdict()
    o.target_rows = spark.read.format("delta").load(str(target)).count()
    o.done["status"] = cli("status", "--json")

    o.done["report"] = runner.deltasink("report", "--config", str(config), "--out",
                                        str(root / "dashboard.html"), env=environ, cwd=cwd)
    o.done["list"] = cli("quarantine", "list")
    quarantine = spark.read.format("delta").load(str(catalog.at("orders_quarantine")))
    o.quarantine = {r["reason"]: int(r["count"]) for r in
                    quarantine.groupBy("reason").count().collect()}

    # Rows lost behind deltasink's back; the replay puts back exactly those.
    o.deleted = [r[0] for r in spark.read.format("delta").load(str(target))
                 .select("event_id").orderBy("event_id").limit(25).collect()]
    listed = ", ".join(f"'{e}'" for e in o.deleted)
    spark.sql(f"DELETE FROM delta.`{target}` WHERE event_id IN ({listed})").collect()
    o.done["replay"] = cli("replay", "--from-timestamp", started)
    o.verdicts["replay"] = verdict()

    # The producer's old format read by events_v2: the quarantined legacy records land once.
    write(root, catalog, {**user, "schema": "events_v2"})
    user_path.write_text(yaml.safe_dump({**user, "schema": "events_v2"}))  # the notebook's too
    o.done["redrive"] = cli("quarantine", "redrive")
    o.verdicts["redrive"] = verdict(tuple(legacy))
    o.redriven = spark.read.format("delta").load(str(catalog.at("orders_quarantine"))) \
        .where("redriven_version IS NOT NULL").count()

    # A group: this pipeline's new records and an upsert pipeline, one session.
    before_group = latest_version(spark, target)
    o.sends.append(produce_events(bootstrap, topic, 150, duplicate_rate=0.1, seed=49,
                                  id_prefix="g"))
    rng = random.Random(44)
    o.versions = make_versions(60, range(4), rng)
    o.versions += replays(o.versions, 0.2, rng)
    produce_versions(bootstrap, latest_topic, o.versions, rng)
    latest = write(root, catalog, {
        "name": "latest", "schema": "events_v1",
        "source": {"bootstrap_servers": bootstrap, "topics": [latest_topic],
                   "max_records_per_batch": 100},
        "target": {"path": "lake/latest", **UPSERT}, "checkpoint": "lake/_checkpoints/latest",
        "spark": catalog.spark})
    o.done["group"] = runner.deltasink("run", "--config", str(config), "--config", str(latest),
                                       env=environ, cwd=cwd)
    o.verdicts["group"] = verdict(tuple(legacy))
    o.upsert_mismatches = mismatches(spark, by_path(catalog, load_config(latest, environ={})),
                                     o.versions)
    o.files["group"] = num_files(spark, catalog)
    o.done["maintain again"] = maintain(o, user_path)
    o.files["again"] = num_files(spark, catalog)

    # The group run's records taken out by a rewind, and landed once more by the next run.
    o.done["rewind"] = cli("rewind", "--to-version", str(before_group))
    o.rewound_rows = spark.read.format("delta").load(str(target)).count()
    o.done["after rewind"] = runner.run(config, validate=True, env=environ, cwd=cwd)
    o.verdicts["after rewind"] = verdict(tuple(legacy))

    # A duplicate planted behind deltasink's back fails the full validation.
    spark.read.format("delta").load(str(target)).limit(1).write.format("delta") \
        .mode("append").save(str(target))
    o.done["planted"] = cli("validate", "--full")
    return o


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stdout


def test_the_first_run_was_killed_after_batch_1s_target_commit(ops: Ops) -> None:
    done = ops.done["killed"]
    if ops.catalog.mode == "connect":  # the server's batch worker is killed, not the client
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
    else:
        assert done.returncode == -signal.SIGKILL, done.stdout[-2000:] + done.stderr[-3000:]
        assert "injected fault at after_target_commit (batch 1)" in done.stderr
    assert 1 in ops.killed_commits, ops.killed_commits  # batch 1 reached the target


def maintained(done: subprocess.CompletedProcess[str], prefix: str,
               tables: tuple[str, ...]) -> list[str]:
    """The notebook's actions, after checking that each of ``tables`` was compacted and
    vacuumed by its catalog name."""
    actions: list[str] = json.loads(_ok(done).strip().splitlines()[-1])
    for table in tables:
        name = f"{prefix}.{table}"
        # the target is compacted in event-time order (ZORDER BY its time field)
        assert any(a == f"OPTIMIZE {name}" or a.startswith(f"OPTIMIZE {name} ZORDER BY ")
                   for a in actions), actions
        assert f"VACUUM {name} RETAIN 168 HOURS" in actions, actions
    return actions


def test_maintenance_compacts_the_catalog_tables_there_are(ops: Ops) -> None:
    before, after = ops.files["before"], ops.files["after"]
    # The killed run writes its metrics rows once a minute: whether their table existed by the
    # kill depends on the machine's speed (it did at load 20-33, not at load 5).
    metrics = TABLES[3:] if TABLES[3] in before else ()
    actions = maintained(ops.done["maintain"], ops.catalog.prefix, TABLES[:2] + metrics)
    for absent in (TABLES[2], *(() if metrics else TABLES[3:])):
        assert f"SKIP {ops.catalog.prefix}.{absent} (does not exist)" in actions, actions
    assert before["orders"] > ops.partitions and after["orders"] == ops.partitions, \
        (before, after)
    # The full validation after the compaction recorded the first verdicts: that table is new.
    assert set(after) - set(before) == {TABLES[2]}, (before, after)
    assert all(after[t] <= before[t] for t in before), (before, after)


def test_maintenance_again_compacts_all_four_catalog_tables(ops: Ops) -> None:
    maintained(ops.done["maintain again"], ops.catalog.prefix, TABLES)
    before, after = ops.files["group"], ops.files["again"]
    assert set(after) == set(TABLES), after
    assert all(after[t] <= before[t] for t in TABLES) and after["orders"] < before["orders"], \
        (before, after)


def test_after_maintenance_the_committed_batch_is_still_skipped_and_all_lands_once(
        ops: Ops) -> None:
    out = _ok(ops.done["rerun"])
    assert "(replay: already committed, skipped)" in out, out[-3000:]
    assert "quality PASSED" in out, out[-3000:]
    assert ops.verdicts["rerun"].clean, ops.verdicts["rerun"]


def test_status_reads_the_catalog_pipeline_in_sync(ops: Ops) -> None:
    state = json.loads(_ok(ops.done["status"]))
    assert state["in_sync"], state
    assert state["target_rows"] == ops.target_rows == len(ops.sends[0].event_ids)
    assert state["quarantine_rows"] == sum(ops.sends[0].poison.values()) + \
        len(ops.sends[0].legacy_ids)


def test_report_shows_what_landed(ops: Ops) -> None:
    _ok(ops.done["report"])
    traces = plotted((ops.root / "dashboard.html").read_text(encoding="utf-8"))
    assert sum(traces["inserted"]) == ops.target_rows
    assert sum(traces["quarantined"]) == sum(ops.quarantine.values())
    sent = ops.sends[0]
    assert sum(traces["records in"]) == sent.sent


def test_quarantine_list_counts_each_reason_of_the_catalog_quarantine(ops: Ops) -> None:
    out = _ok(ops.done["list"])
    total = sum(ops.quarantine.values())
    assert total == sum(ops.sends[0].poison.values()) + len(ops.sends[0].legacy_ids)
    assert (f"quarantine {ops.catalog.prefix}.orders_quarantine: {total} rows, {total} pending, "
            "0 redriven") in out, out
    listed = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()[2:]
              if len(line.split()) == 3}
    assert listed == ops.quarantine, out


def test_replay_puts_back_only_the_rows_lost(ops: Ops) -> None:
    out = _ok(ops.done["replay"])
    assert f"inserted={len(ops.deleted)} " in out, out[-3000:]
    assert ops.verdicts["replay"].clean, ops.verdicts["replay"]


def test_redrive_lands_the_legacy_records_once(ops: Ops) -> None:
    out = _ok(ops.done["redrive"])
    legacy = len(ops.sends[0].legacy_ids)
    assert f"redriven={legacy} inserted={legacy}" in out, out[-3000:]
    assert ops.redriven == legacy
    assert ops.verdicts["redrive"].clean, ops.verdicts["redrive"]


def test_a_group_run_lands_each_pipeline_once_and_upserts_keep_the_latest(ops: Ops) -> None:
    out = _ok(ops.done["group"])
    assert "group: 2 pipelines, 2 ok, 0 failed" in out, out[-3000:]
    assert ops.verdicts["group"].clean, ops.verdicts["group"]
    assert ops.upsert_mismatches == [], ops.upsert_mismatches[:10]


def test_rewind_takes_out_the_group_runs_records_and_the_next_run_lands_them_once(
        ops: Ops) -> None:
    out = _ok(ops.done["rewind"])
    assert "retired; the next run starts at" in out, out[-3000:]
    sent = ops.sends[0]
    assert ops.rewound_rows == len(sent.event_ids) + len(sent.legacy_ids)
    out = _ok(ops.done["after rewind"])
    assert "quality PASSED" in out, out[-3000:]
    assert ops.verdicts["after rewind"].clean, ops.verdicts["after rewind"]


def test_a_planted_duplicate_fails_validate_with_exit_3(ops: Ops) -> None:
    done = ops.done["planted"]
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
