"""A streaming query's recent progress as Spark's JSON (``pipelines/runtime/progress.py``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors.exceptions import captured
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger.lag import progress_lags
from pipelines.runtime.progress import input_rows, recent_progress


def test_the_json_progress_matches_spark_s_own_and_converts_no_java_exception(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = f"progress-{uuid.uuid4().hex[:8]}"
    produce_events(broker.bootstrap_servers, topic, 30, seed=1)
    query = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", broker.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", 20).load()
             .writeStream.foreachBatch(lambda batch, _id: batch.count())  # rows counted: read
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)

    converted: list[str] = []
    convert: Callable[..., Any] = captured.convert_exception

    def counted(exc: Any) -> Any:
        converted.append(type(exc).__name__)
        return convert(exc)

    monkeypatch.setattr(captured, "convert_exception", counted)
    ours = recent_progress(query)
    assert converted == []  # no Java exception reached Python
    spark_s = query.recentProgress
    assert converted, "PySpark's own conversion no longer raises: recent_progress may go"
    monkeypatch.undo()

    assert [(p["id"], p["batchId"], p["numInputRows"]) for p in ours] == \
        [(str(p.id), p.batchId, p.numInputRows) for p in spark_s]
    assert [input_rows(p) for p in ours if input_rows(p)] == [20, 10]
    assert [s["endOffset"] for p in ours for s in p["sources"]] == \
        [json.loads(s.endOffset) for p in spark_s for s in p.sources]
    last = max(p["batchId"] for p in ours)
    assert progress_lags(ours)[(str(query.id), last)] == 0  # everything was read
    assert progress_lags(ours)[(str(query.id), 0)] == 10  # 10 left after the first 20


def test_a_spark_connect_style_query_is_read_through_the_public_json() -> None:
    class Progress:  # its JSON has no top-level numInputRows, as Spark Connect's has not
        json = '{"id": "q", "batchId": 0, "sources": [{"numInputRows": 2}, {"numInputRows": 3}]}'

    class ConnectQuery:  # no Java query behind it, as a Spark Connect client's
        @property
        def recentProgress(self) -> list[Progress]:  # Spark's name
            return [Progress()]

    read = recent_progress(ConnectQuery())
    assert read == [{"id": "q", "batchId": 0,
                     "sources": [{"numInputRows": 2}, {"numInputRows": 3}]}]
    assert input_rows(read[0]) == 5  # the sources' rows, as PySpark's own property counts them
