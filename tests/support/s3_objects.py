"""Delta tables and checkpoints on the test S3 server, read and altered with boto3 and pyarrow:
no JVM in the test process, which has no S3 connector (the tests' ``spark`` session has none).

- :func:`table_rows` replays a Delta table's log (JSON commits, a Parquet checkpoint if there is
  one) and reads the live files' columns, as the exactly-once checker needs them;
- :func:`plant_duplicate` appends one existing row again, behind deltasink's back, as a commit
  of its own (a writer outside the pipeline);
- :func:`roll_back` deletes a checkpoint's newest offsets and commits objects, as a restore from
  an older copy of the bucket would;
- :func:`s3_config` is a pipeline with every location in the bucket, and :func:`verdict` the
  exactly-once counts of ``tests/support/checker.py``, read from the bucket.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections import Counter
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.kafka.produce import ProduceSummary
from tests.support.s3 import s3a_conf


def split(location: str) -> tuple[str, str]:
    """``s3a://bucket/some/key`` -> ``("bucket", "some/key")``."""
    bucket, _, key = location.partition("://")[2].partition("/")
    return bucket, key.rstrip("/")


def keys(client: Any, bucket: str, prefix: str) -> list[str]:
    """Every object key under ``prefix`` (all pages)."""
    found: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found += [o["Key"] for o in page.get("Contents", [])]
    return found


def _get(client: Any, bucket: str, key: str) -> bytes:
    body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def _actions(client: Any, bucket: str, log: str) -> tuple[int, list[dict[str, Any]]]:
    """The latest version and the add/remove actions to replay, in order."""
    names = [k[len(log) + 1:] for k in keys(client, bucket, log + "/")]
    versions = sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())
    if not versions:
        raise FileNotFoundError(f"no Delta log at s3://{bucket}/{log}")
    actions: list[dict[str, Any]] = []
    start = 0
    if "_last_checkpoint" in names:
        start = json.loads(_get(client, bucket, f"{log}/_last_checkpoint"))["version"]
        parts = sorted(n for n in names if n.startswith(f"{start:020d}.checkpoint")
                       and n.endswith(".parquet"))
        for part in parts:
            table = pq.read_table(io.BytesIO(_get(client, bucket, f"{log}/{part}")),
                                  columns=["add", "remove"])
            for row in table.to_pylist():
                actions += [{k: row[k]} for k in ("add", "remove") if row.get(k)]
        start += 1
    for version in (v for v in versions if v >= start):
        for line in _get(client, bucket, f"{log}/{version:020d}.json").decode().splitlines():
            action = json.loads(line)
            if "add" in action or "remove" in action:
                actions.append(action)
    return versions[-1], actions


def live_files(client: Any, bucket: str, table: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """The table's latest version and its live files (``path -> add action``)."""
    version, actions = _actions(client, bucket, f"{table}/_delta_log")
    files: dict[str, dict[str, Any]] = {}
    for action in actions:
        if "add" in action:
            add = action["add"]
            assert not add.get("deletionVector"), "a deletion vector: not read here"
            files[add["path"]] = add
        else:
            files.pop(action["remove"]["path"], None)
    return version, files


def table_rows(location: str, client: Any, columns: list[str]) -> list[dict[str, Any]]:
    """The rows of the Delta table at ``location`` (its latest version), ``columns`` only."""
    bucket, table = split(location)
    rows: list[dict[str, Any]] = []
    for path, add in live_files(client, bucket, table)[1].items():
        data = pq.read_table(io.BytesIO(_get(client, bucket, f"{table}/{unquote(path)}")))
        parts = add.get("partitionValues") or {}
        for row in data.select([c for c in columns if c not in parts]).to_pylist():
            rows.append({**{c: parts[c] for c in columns if c in parts}, **row})
    return rows


def plant_duplicate(location: str, client: Any) -> int:
    """Append a copy of one live row of the table at ``location`` as a commit of its own.

    Returns:
        The version of that commit.
    """
    bucket, table = split(location)
    version, files = live_files(client, bucket, table)
    path, add = sorted(files.items())[0]
    one: pa.Table = pq.read_table(io.BytesIO(_get(client, bucket, f"{table}/{unquote(path)}")))
    sink = io.BytesIO()
    pq.write_table(one.slice(0, 1), sink)
    folder = unquote(path).rpartition("/")[0]
    name = f"{folder + '/' if folder else ''}part-planted-{uuid.uuid4().hex}.snappy.parquet"
    client.put_object(Bucket=bucket, Key=f"{table}/{name}", Body=sink.getvalue())
    now = int(time.time() * 1000)
    commit = [{"commitInfo": {"timestamp": now, "operation": "WRITE",
                              "operationParameters": {"mode": "Append"}, "isBlindAppend": True}},
              {"add": {"path": quote(name), "partitionValues": add.get("partitionValues") or {},
                       "size": len(sink.getvalue()), "modificationTime": now,
                       "dataChange": True}}]
    client.put_object(Bucket=bucket, Key=f"{table}/_delta_log/{version + 1:020d}.json",
                      Body="\n".join(json.dumps(a) for a in commit).encode(),
                      IfNoneMatch="*")
    return version + 1


def batches(location: str, client: Any, folder: str) -> list[int]:
    """The batch ids in a checkpoint's ``offsets`` or ``commits`` folder, in order."""
    bucket, root = split(location)
    names = (k.rpartition("/")[2] for k in keys(client, bucket, f"{root}/{folder}/"))
    return sorted(int(n) for n in names if n.isdigit())


def roll_back(location: str, client: Any, count: int) -> list[int]:
    """Delete the checkpoint's newest ``count`` offsets and commits objects; return their ids."""
    bucket, root = split(location)
    gone = batches(location, client, "offsets")[-count:]
    for batch in gone:
        for folder in ("offsets", "commits"):
            client.delete_object(Bucket=bucket, Key=f"{root}/{folder}/{batch}")
    return gone


def s3_config(base: str, endpoint: str, bootstrap: str, topic: str, batch: int
              ) -> dict[str, Any]:
    """The required keys with every location under ``base``, and S3A's endpoint settings."""
    return {"name": "orders",
            "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                       "max_records_per_batch": batch},
            "target": {"path": f"{base}/orders"},
            "checkpoint": f"{base}/_checkpoints/orders",
            "quality": {"results_path": f"{base}/_quality/results",
                        "metrics_path": f"{base}/_quality/run_metrics"},
            "spark": {"conf": s3a_conf(endpoint)}}


def verdict(client: Any, base: str, sent: ProduceSummary,
            poison: int | None = None) -> dict[str, int]:
    """The exactly-once counts of tests/support/checker.py, read from the bucket."""
    ids = Counter(r["event_id"] for r in table_rows(f"{base}/orders", client, ["event_id"]))
    spots = Counter((r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]) for r in
                    table_rows(f"{base}/orders_quarantine", client,
                               ["kafka_topic", "kafka_partition", "kafka_offset"]))
    expected = set(sent.event_ids)
    wanted = sum(sent.poison.values()) if poison is None else poison
    return {"lost": len(expected - ids.keys()),
            "duplicated": sum(1 for n in ids.values() if n > 1),
            "unexpected": len(ids.keys() - expected),
            "quarantine_lost": max(0, wanted - len(spots)),
            "quarantine_extra": max(0, len(spots) - wanted),
            "quarantine_duplicated": sum(1 for n in spots.values() if n > 1)}
