"""``deltasink quarantine``: poison pills a new schema accepts are redriven exactly once."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.topics import ensure_topic
from pipelines.ledger import state
from pipelines.ops.quarantine_list import list_quarantine
from pipelines.ops.redrive import redrive
from pipelines.ops.redrive_commit import redrive_app_id
from pipelines.run import run_pipeline
from quality.validate import validate_table
from schemas.base import FieldSpec
from tests.chaos.test_bad_input import send
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import make_config, write_config

ISO = "2026-11-20T10:00:00Z"
LEGACY = "20.11.2026 11:00:00+01:00"  # events_v2's extra format; the same date in UTC


def value(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def records() -> tuple[list[tuple[bytes | None, bytes | None]], list[str], list[str], int]:
    """(records, ids valid under v1, ids only v2 accepts, poison pills under v1)."""
    good = [f"good-{i}" for i in range(30)]
    out: list[tuple[bytes | None, bytes | None]] = [
        (None, value(event_id=i, event_type="order_placed", event_time=ISO)) for i in good]
    fixable = [f"notype-{i}" for i in range(6)] + [f"legacy-{i}" for i in range(6)]
    out += [(None, value(event_id=i, event_time=ISO)) for i in fixable[:6]]  # missing:event_type
    out += [(None, value(event_id=i, event_type="x", event_time=LEGACY)) for i in fixable[6:]]
    out.append((None, value(event_id="nulltype", event_type=None, event_time=ISO)))
    out += [(None, value(event_id="legacy-twice", event_type="x", event_time=LEGACY))] * 2
    out.append((None, value(event_id="good-0", event_type="x", event_time=LEGACY)))  # landed
    fixable += ["nulltype", "legacy-twice"]
    out += [(None, b'{"event_id": "broken'), (None, b"[1, 2]"),  # stay bad, same reason
            (None, value(event_id="ts-bad", event_type="x", event_time="yesterday")),
            (None, value(event_id="both-bad", event_time="yesterday"))]  # reason changes
    return out, good, fixable, len(out) - len(good)


def _version(spark: SparkSession, config: PipelineConfig) -> int:
    return int(config.target.ref.history(spark, 1).first()["version"])  # type: ignore[index]


def test_formats_must_parse_a_zone() -> None:
    FieldSpec("t", "timestamp", formats=("dd.MM.yyyy HH:mm:ssXXX", "yyyyMMddHHmmss'Z'Z"))
    with pytest.raises(ValueError, match="parses no zone"):
        FieldSpec("t", "timestamp", formats=("yyyy-MM-dd HH:mm:ss 'UTC'",))
    with pytest.raises(ValueError, match="timestamp fields only"):
        FieldSpec("s", "string", formats=("yyyyXXX",))


@pytest.mark.extended
@pytest.mark.slow
def test_redrive_after_a_schema_fix_lands_each_record_once_across_sigkills(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"redrive-{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, topic, 1)
    sent, good, fixable, poison = records()
    send(bootstrap, topic, sent)
    v1 = make_config(lake, bootstrap, topic)
    run_pipeline(spark, v1, validate=False, progress=lambda _l: None)
    assert check(spark, v1, good, poison).clean

    # The schema is fixed: event_type optional, a legacy event_time format accepted.
    path = write_config(lake, bootstrap, topic, schema="events_v2")
    cfg = make_config(lake, bootstrap, topic, schema="events_v2")
    offsets = state.recorded_offsets(spark, cfg.target.ref, cfg.name)
    before = (_version(spark, cfg), cfg.target.quarantine_ref.read(spark).count())
    said: list[str] = []
    assert redrive(spark, cfg, dry_run=True, say=said.append) is None
    assert said[-2] == ("total: selected=20 redrive=16 (distinct keys 15) still_failing=4 "
                        "reason_changes=1"), said
    said.clear()
    redrive(spark, cfg, reason="bad_timestamp", dry_run=True, say=said.append)
    assert "reason bad_timestamp:event_time: redrive=9 still_failing=1 (reason changes: 0)" \
        in said, said
    assert (_version(spark, cfg), cfg.target.quarantine_ref.read(spark).count()) == before
    with pytest.raises(ConfigError, match="is not a timestamp"):
        redrive(spark, cfg, since="last tuesday", say=said.append)

    args = ("quarantine", "redrive", "--config", str(path))
    crashed = runner.deltasink(*args, fault="before_redrive_commit")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    app_id = redrive_app_id(cfg.name)  # nothing reached the target (it only lost a NOT NULL)
    assert not [c for c in state.sink_commits(spark, cfg.target.ref) if c.app_id == app_id]
    assert cfg.target.ref.read(spark).count() == len(good)
    crashed = runner.deltasink(*args, fault="after_redrive_commit")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    landed = _version(spark, cfg)
    assert f"target version {landed}: inserted=14 " in crashed.stdout, crashed.stdout
    assert check(spark, cfg, good + fixable, poison).clean  # landed, once
    quarantine = cfg.target.quarantine_ref
    assert quarantine.read(spark).where("redriven_at IS NOT NULL").count() == 0  # not marked

    said.clear()
    result = redrive(spark, cfg, say=said.append)  # the rerun marks them, inserting nothing
    assert result is not None and (result.txn_version, result.inserted) == (landed, 0), said
    assert (result.redriven, result.reasons_updated) == (16, 1), said
    assert result.target_version == _version(spark, cfg) == landed + 1
    verdict = check(spark, cfg, good + fixable, poison)
    assert verdict.clean, verdict
    rows = quarantine.read(spark)
    marked = rows.where("redriven_at IS NOT NULL")
    assert marked.count() == 16
    assert {r[0] for r in marked.select("redriven_version").distinct().collect()} == \
        {result.target_version}
    pending = {r["reason"] for r in rows.where("redriven_at IS NULL").collect()}
    assert pending == {"invalid_json", "not_an_object", "bad_timestamp:event_time"}
    both = rows.where(F.col("raw_value").cast("string").contains("both-bad")).first()
    assert both is not None and both["reason"] == "bad_timestamp:event_time"
    assert state.recorded_offsets(spark, cfg.target.ref, cfg.name) == offsets

    again = redrive(spark, cfg, say=said.append)  # nothing left to do: nothing committed
    assert again is not None and again.txn_version is None and again.redriven == 0
    assert _version(spark, cfg) == result.target_version
    counts = {c.reason: (c.pending, c.redriven) for c in
              list_quarantine(spark, cfg, say=said.append)}
    assert counts == {"missing:event_type": (0, 7), "bad_timestamp:event_time": (2, 9),
                      "invalid_json": (1, 0), "not_an_object": (1, 0)}
    assert list_quarantine(spark, cfg, since="2999-01-01T00:00:00Z", say=said.append) == []
    assert len(list_quarantine(spark, cfg, reason="missing", since="2000-01-01",
                               say=said.append)) == 1
    report = validate_table(spark, cfg, full=True)
    assert report.success, report.summary_lines()

    # The pipeline resumes where it was, under events_v2.
    send(bootstrap, topic, [(None, value(event_id="after", event_time=ISO))])
    assert run_pipeline(spark, cfg, validate=False, progress=lambda _l: None).inserted == 1
    verdict = check(spark, cfg, [*good, *fixable, "after"], poison)
    assert verdict.clean, verdict
