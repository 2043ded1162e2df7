"""``python -m bench.parse``: records/s of the JVM parse, ``events_v1`` next to a YAML schema,
and the same records as JSON and as Avro.

The YAML schema is ``schemas/examples/orders_v1.yml``: every field type (string, int, long,
double, decimal, boolean, epoch-ms and ISO timestamps, date, array, struct, object), a composite
key and a header column. The ``clicks`` cells parse the same click records (5 fields, a
timestamp) once as JSON and once as Avro in the Confluent wire format, half written with a
version-1 writer schema and half with version 2 (one more optional field), decoded with
``from_avro`` (:mod:`pipelines.formats.avro`). Every cell parses the same number of records, all
valid, from the same
kind of rows Spark's Kafka source gives (``key, value, topic, partition, offset, timestamp,
timestampType, headers``), cached in memory first so only the parse is timed:
``classify`` → ``valid_events``, written to Spark's ``noop`` sink (every column computed). Each
cell runs ``--passes`` times after one warm-up; the median is reported.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from bench.avro_cells import CLICKS, clicks_value, writer_schemas
from pipelines.formats.avro import AvroDecoder, WriterSchemas
from pipelines.kafka.produce import make_event
from pipelines.sink.parse import classify, valid_events
from schemas import get_schema
from schemas.base import EventSchema
from schemas.loader import load_schema_file

EXAMPLE = Path(__file__).resolve().parents[1] / "schemas" / "examples" / "orders_v1.yml"
RESULTS = Path(__file__).resolve().parent / "results"
_ROWS = ("key binary, value binary, topic string, partition int, offset long, "
         "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>")


def order_value(i: int, rng: random.Random) -> bytes:
    """One valid ``orders_v1`` record value."""
    return json.dumps({
        "order_id": f"o-{i // 4}", "line_no": i % 4 + 1, "qty": rng.randint(1, 9),
        "price": round(rng.uniform(1, 500), 2), "amount": round(rng.uniform(1, 5000), 2),
        "paid": rng.random() < 0.5, "status": rng.choice(["new", "paid", "shipped"]),
        "updated_at": 1_772_366_400_000 + i, "created_at": "2026-03-01T11:00:00+01:00",
        "ship_date": "2026-03-04", "tags": ["gift", "eu"][: rng.randint(0, 2)],
        "address": {"city": "Lyon", "zip": "69001"}, "attrs": {"channel": "web"},
    }).encode()


def rows(spark: SparkSession, schema: EventSchema, count: int, avro: bool = False) -> DataFrame:
    """``count`` cached Kafka-like rows of valid records for ``schema`` (Avro: wire format)."""
    rng = random.Random(1)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    data: list[tuple[Any, ...]] = []
    for i in range(count):
        when = start + timedelta(seconds=i)
        if schema.name == CLICKS.name:
            value = clicks_value(i, when, avro)
        else:
            value = make_event(f"e-{i}", when, rng) if schema.name == "events_v1" \
                else order_value(i, rng)
        data.append((None, value, "bench", i % 3, i, when, 0, [("trace-id", b"t-%d" % i)]))
    frame = spark.createDataFrame(data, _ROWS).cache()
    frame.count()
    return frame


def parse_seconds(raw: DataFrame, schema: EventSchema,
                  avro: WriterSchemas | None = None) -> float:
    """Wall seconds to parse every row of ``raw`` (all columns computed, nothing written)."""
    start = time.monotonic()
    decoder = None if avro is None else AvroDecoder(avro)
    valid_events(classify(raw, schema, 1_048_576, decoder=decoder), schema).write \
        .format("noop").mode("overwrite").save()
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    """Measure both cells and write ``bench/results/parse.{json,md}``."""
    parser = argparse.ArgumentParser(prog="python -m bench.parse", description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from pipelines.runtime.spark import get_spark

    spark = get_spark("deltasink-bench-parse")
    cells = []
    for schema, avro in ((get_schema("events_v1"), None), (load_schema_file(EXAMPLE), None),
                         (CLICKS, None), (CLICKS, writer_schemas())):
        raw = rows(spark, schema, args.records, avro=avro is not None)
        parse_seconds(raw, schema, avro)  # warm-up: code generation, JIT
        seconds = [parse_seconds(raw, schema, avro) for _ in range(args.passes)]
        median = statistics.median(seconds)
        cells.append({"schema": schema.name, "format": "json" if avro is None else "avro",
                      "fields": len(schema.fields),
                      "records": args.records, "passes_s": [round(s, 3) for s in seconds],
                      "median_s": round(median, 3),
                      "records_per_s": round(args.records / median)})
        raw.unpersist()
        print(json.dumps(cells[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "parse.json").write_text(json.dumps(cells, indent=2) + "\n")
    lines = ["| schema | format | top-level fields | records | median s | records/s | passes s |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {c['schema']} | {c['format']} | {c['fields']} | {c['records']} | "
              f"{c['median_s']} | "
              f"{c['records_per_s']} | {c['passes_s']} |" for c in cells]
    (args.out / "parse.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
