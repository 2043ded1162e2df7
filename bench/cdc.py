"""``python -m bench.cdc``: the cost of a change stream's batch next to an insert-only one.

One session, warm. Three cells, each its own tables, each batch through the sink's real batch
body (:class:`pipelines.sink.batch.BatchSink`: parse, in-batch dedup, every MERGE and commit)
fed Kafka-shaped rows directly:

- **insert_only**: ``events_v1`` JSON events into a target holding ``--rows`` events; each
  round's batch is ``--batch`` new events;
- **replica** and **scd2**: Debezium change events (the JSON converter's envelope, schemas on,
  as Debezium 3.6's Postgres connector writes them: ``int4`` key, ``text``, ``int4``,
  ``numeric(10,2)`` as Connect's Decimal, ``timestamp`` as MicroTimestamp) of a table of
  ``--rows`` rows, snapshotted first; each round's batch is ``--batch`` updates of existing rows
  at rising LSNs (a tenth of them deletes, so the replica's deletes table and the history's
  closed versions grow).

The rows are built in the JVM and cached before each batch, so only the batch is timed. Each
cell runs ``--rounds`` batches after one warm-up; the median is reported, with records/s and the
ratio to insert-only. Writes ``bench/results/cdc.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.loader import parse_config
from pipelines.sink.batch import BatchSink
from pipelines.sink.tables import ensure_sink_tables

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC = "bench.public.items"
_COLUMNS = [{"type": "int32", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": "name"},
            {"type": "int32", "optional": True, "field": "qty"},
            {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
             "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
             "field": "price"},
            {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
             "version": 1, "field": "seen"}]
_ROW = {"type": "struct", "optional": True, "name": "bench.public.items.Value",
        "fields": _COLUMNS}
VALUE_SCHEMA = json.dumps({"type": "struct", "optional": False, "fields": [
    {**_ROW, "field": "before"}, {**_ROW, "field": "after"},
    {"type": "struct", "optional": False, "field": "source", "fields": [
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "lsn"}]},
    {"type": "string", "optional": False, "field": "op"},
    {"type": "int64", "optional": True, "field": "ts_ms"}]}, separators=(",", ":"))
KEY_SCHEMA = json.dumps({"type": "struct", "optional": False, "fields": [_COLUMNS[0]]},
                        separators=(",", ":"))
_KAFKA = ("key binary, value binary, topic string, partition int, offset long, "
          "timestamp timestamp, timestampType int")


def change_rows(spark: SparkSession, first: int, count: int, lsn: int, op: str,
                keys: int) -> DataFrame:
    """``count`` change events at offsets from ``first``: ``op`` of key ``i % keys`` at LSN
    ``lsn + i`` (a tenth deletes when ``op`` is ``u``)."""
    i = F.col("id")
    key_id = (i % F.lit(keys)).cast("int")
    deleted = (F.lit(op) == F.lit("u")) & (i % 10 == 3)
    this_op = F.when(deleted, F.lit("d")).otherwise(F.lit(op))
    price = F.base64(F.unhex(F.lpad(F.hex((i * 7 % 100_000).cast("long")), 16, "0")))
    row = F.struct(key_id.alias("id"), F.concat(F.lit("n"), i.cast("string")).alias("name"),
                   (i % 1000).cast("int").alias("qty"), price.alias("price"),
                   (F.lit(1_709_214_330_000_000) + i).alias("seen"))
    keyed = F.struct(key_id.alias("id"),
                     *[F.lit(None).cast("string").alias(str(c["field"])) for c in _COLUMNS[1:]])
    payload = F.to_json(F.struct(
        F.when(deleted, keyed).alias("before"), F.when(~deleted, row).alias("after"),
        F.struct(F.lit("postgresql").alias("connector"), F.lit(1_700_000_000_000).alias("ts_ms"),
                 (F.lit(lsn) + i).alias("lsn")).alias("source"),
        this_op.alias("op"), F.lit(1_700_000_000_000).alias("ts_ms")), {"ignoreNullFields":
                                                                       "false"})
    value = F.concat(F.lit(f'{{"schema":{VALUE_SCHEMA},"payload":'), payload, F.lit("}"))
    key = F.concat(F.lit(f'{{"schema":{KEY_SCHEMA},"payload":{{"id":'), key_id.cast("string"),
                   F.lit("}}"))
    return _kafka(spark, first, count, key.cast("binary"), value.cast("binary"))


def event_rows(spark: SparkSession, first: int, count: int) -> DataFrame:
    """``count`` new ``events_v1`` events (unique ids) at offsets from ``first``."""
    i = F.col("id")
    value = F.to_json(F.struct(F.concat(F.lit("e-"), i.cast("string")).alias("event_id"),
                               F.lit("click").alias("event_type"),
                               F.date_format(F.timestamp_seconds(F.lit(1_772_366_400) + i % 600),
                                             "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("event_time"),
                               F.struct(F.lit(1).alias("v")).alias("payload")))
    return _kafka(spark, first, count, F.lit(None).cast("binary"), value.cast("binary"))


def _kafka(spark: SparkSession, first: int, count: int, key: Column, value: Column
           ) -> DataFrame:
    frame = spark.range(first, first + count).select(
        key.alias("key"), value.alias("value"), F.lit(TOPIC).alias("topic"),
        F.lit(0).alias("partition"), F.col("id").alias("offset"),
        F.current_timestamp().alias("timestamp"), F.lit(0).alias("timestampType")).cache()
    frame.count()
    return frame


def sink_for(spark: SparkSession, lake: Path, cell: str) -> BatchSink:
    """A batch sink of one cell's pipeline, its tables made."""
    raw: dict[str, Any] = {
        "name": f"bench_{cell}", "checkpoint": str(lake / "_checkpoints" / cell),
        "source": {"topics": [TOPIC], "format": "json" if cell == "insert_only" else "debezium"},
        "target": {"path": str(lake / cell),
                   **({} if cell == "insert_only" else {"mode": "upsert" if cell == "replica"
                                                        else "scd2"})},
        "quality": {"enabled": False}}
    if cell == "insert_only":
        raw["schema"] = "events_v1"
    config = parse_config(raw)
    ensure_sink_tables(spark, config, config.event_schema())
    return BatchSink(config, config.event_schema(), "bench", lambda _s: "bench-query",
                     lambda _s, b: {TOPIC: {0: 10**9 + b}})


def cell_seconds(spark: SparkSession, lake: Path, cell: str, rows: int, batch: int,
                 rounds: int) -> list[float]:
    """Seconds of each timed batch of ``cell`` (after its table is filled and one warm-up)."""
    sink = sink_for(spark, lake, cell)
    make: Callable[[int, int, int], DataFrame]
    if cell == "insert_only":
        sink(event_rows(spark, 0, rows), 0)

        def make(offset: int, count: int, _lsn: int) -> DataFrame:
            return event_rows(spark, offset, count)
    else:
        sink(change_rows(spark, 0, rows, 1_000, "r", rows), 0)

        def make(offset: int, count: int, lsn: int) -> DataFrame:
            return change_rows(spark, offset, count, lsn, "u", rows)
    out = []
    for n in range(rounds + 1):
        frame = make(rows + n * batch, batch, 10_000_000 + n * batch)
        start = time.monotonic()
        sink(frame, n + 1)
        if n:  # the first is the warm-up
            out.append(time.monotonic() - start)
        frame.unpersist()
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure the cells and write ``bench/results/cdc.{json,md}``."""
    parser = argparse.ArgumentParser(prog="python -m bench.cdc", description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000, help="rows in each table first")
    parser.add_argument("--batch", type=int, default=50_000, help="records per timed batch")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from pipelines.runtime.spark import get_spark

    spark = get_spark("deltasink-bench-cdc")
    cells = []
    with tempfile.TemporaryDirectory(prefix="bench-cdc-") as folder:
        for cell in ("insert_only", "replica", "scd2"):
            seconds = cell_seconds(spark, Path(folder), cell, args.rows, args.batch,
                                   args.rounds)
            median = statistics.median(seconds)
            cells.append({"cell": cell, "rows": args.rows, "batch": args.batch,
                          "passes_s": [round(s, 3) for s in seconds],
                          "median_s": round(median, 3),
                          "records_per_s": round(args.batch / median)})
            print(json.dumps(cells[-1]), flush=True)
    base = cells[0]["median_s"]
    for c in cells:
        c["vs_insert_only"] = round(c["median_s"] / base, 2)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cdc.json").write_text(json.dumps(cells, indent=2) + "\n")
    lines = ["| cell | rows first | batch | median s | records/s | x insert-only | passes s |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {c['cell']} | {c['rows']} | {c['batch']} | {c['median_s']} | "
              f"{c['records_per_s']} | {c['vs_insert_only']} | {c['passes_s']} |"
              for c in cells]
    (args.out / "cdc.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
