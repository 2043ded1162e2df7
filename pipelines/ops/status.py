"""``deltasink status``: table version, txn ids, checkpoint vs table offsets, counts, lag."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import CheckpointError
from pipelines.ledger import checkpoint, state
from pipelines.sink.freshness import age_seconds


def collect_status(spark: SparkSession, config: PipelineConfig) -> dict[str, Any]:
    """Everything ``status`` shows, as a JSON-friendly dict."""
    target, quarantine = config.target.ref, config.target.quarantine_ref
    out: dict[str, Any] = {"pipeline": config.name, "target": target.describe(),
                           "quarantine": quarantine.describe()}
    if target.exists(spark):
        out["table_version"] = target.latest_version(spark)
        out["target_rows"] = target.read(spark).count()
        commits = state.sink_commits(spark, target)
        out["txn"] = state.txn_versions(commits)
        recorded = state.recorded_offsets(spark, target, config.name)  # RESTORE-aware
        out["table_offsets"] = _offsets(recorded) if recorded else {}
    else:
        out.update(table_version=None, target_rows=0, txn={}, table_offsets={})
    out["quarantine_rows"] = quarantine.read(spark).count() if quarantine.exists(spark) else 0
    try:
        location = checkpoint.active(spark, config.checkpoint)
        latest = checkpoint.latest_offsets(spark, location)
        out["checkpoint"] = {
            "location": location,
            "planned_batch": latest[0] if latest else None,
            "committed_batch": checkpoint.latest_committed_batch(spark, location),
            "offsets": _offsets(latest[1]) if latest else {},
        }
    except CheckpointError as exc:
        out["checkpoint"] = {"location": config.checkpoint, "error": str(exc)}
    out["in_sync"] = out["checkpoint"].get("offsets") == out["table_offsets"]
    out.update(lag_and_freshness(spark, config))
    return out


def lag_and_freshness(spark: SparkSession, config: PipelineConfig,
                      now: datetime | None = None) -> dict[str, Any]:
    """The lag now (asked of Kafka) and the age of the newest event and Kafka timestamp inserted
    (from the run-metrics table)."""
    from pipelines.ledger.lag import current_lag
    from quality.results_read import last_stream_lag, newest_inserted

    now = now or datetime.now(UTC)
    lag = current_lag(spark, config, timeout=5.0)
    event, kafka = newest_inserted(spark, config) if config.quality.enabled else (None, None)
    describe = lag.describe()
    if not lag.own_client:  # Kafka cannot be asked by us: what the stream itself saw last
        seen = last_stream_lag(spark, config) if config.quality.enabled else None
        describe = (f"{lag.error}; the stream saw {seen[0]} records behind at "
                    f"{seen[1]:%Y-%m-%d %H:%M:%S} UTC ({_age(now, seen[1]):.0f}s ago)"
                    if seen else f"{lag.error}; no batch of the stream recorded its lag yet")
    return {"lag": {"records": lag.records, "describe": describe,
                    "own_client": lag.own_client,
                    "partitions": {f"{t}[{p}]": n for (t, p), n in sorted(lag.partitions.items())}},
            "freshness": {"newest_event_time": event, "newest_kafka_timestamp": kafka,
                          "event_s": _age(now, event), "kafka_s": _age(now, kafka)}}


def _age(now: datetime, then: datetime | None) -> float | None:
    age = age_seconds(now, then)
    return None if age is None else round(age, 1)


def _offsets(offsets: dict[str, dict[int, int]]) -> dict[str, dict[str, int]]:
    return {t: {str(p): o for p, o in sorted(ps.items())} for t, ps in sorted(offsets.items())}


def format_status(status: dict[str, Any]) -> list[str]:
    """Human-readable lines for :func:`collect_status`'s output."""
    lines = [f"pipeline        {status['pipeline']}",
             f"target          {status['target']}  version={status['table_version']}  "
             f"rows={status['target_rows']}",
             f"quarantine      {status['quarantine']}  rows={status['quarantine_rows']}"]
    for app_id, version in sorted(status["txn"].items()):
        lines.append(f"txn             {app_id}  last batch={version}")
    ckpt = status["checkpoint"]
    if "error" in ckpt:
        lines.append(f"checkpoint      {ckpt['error']}")
    else:
        lines.append(f"checkpoint      {ckpt['location']}  planned batch={ckpt['planned_batch']}"
                     f"  committed batch={ckpt['committed_batch']}")
    topics = sorted(set(ckpt.get("offsets", {})) | set(status["table_offsets"]))
    for topic in topics:
        parts = sorted(set(ckpt.get("offsets", {}).get(topic, {}))
                       | set(status["table_offsets"].get(topic, {})), key=int)
        for p in parts:
            c = ckpt.get("offsets", {}).get(topic, {}).get(p, "-")
            t = status["table_offsets"].get(topic, {}).get(p, "-")
            lines.append(f"offsets         {topic}[{p}]  checkpoint={c}  table={t}")
    lines.append("in sync         " + ("yes" if status["in_sync"] else
                                       "no (the next run replays or resumes; nothing is lost)"))
    if "lag" in status:
        lag = status["lag"]
        lines.append(f"lag             {lag['describe']}" if not lag.get("own_client", True) else
                     f"lag             {lag['describe']} in Kafka not yet in the target")
        fresh = status["freshness"]
        lines.append("freshness       " + (
            "nothing inserted yet (or not recorded)" if fresh["kafka_s"] is None else
            f"newest event_time inserted {fresh['event_s']:.0f}s ago, newest Kafka timestamp "
            f"inserted {fresh['kafka_s']:.0f}s ago"))
    return lines
