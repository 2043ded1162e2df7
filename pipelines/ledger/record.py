"""What a deltasink commit records: its txn app id and the JSON in its userMetadata.

Every deltasink commit to a target carries ``{"deltasink": {...}}`` as its userMetadata: the
pipeline, the txn app id and batch id, the run, the end offsets of its input, the batch's counts
and the Kafka identity the offsets refer to. The sink writes it (:mod:`pipelines.sink.batch`);
the ledger reads it back (:mod:`pipelines.ledger.state`), so the table's log is the record of
where input stopped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

METADATA_KEY = "deltasink"
#: The key of the batch's counts inside the deltasink userMetadata.
BATCH_KEY = "batch"
#: The key of the Kafka identity (cluster id, topic ids) inside the deltasink userMetadata.
SOURCE_KEY = "source"

Offsets = Mapping[str, Mapping[int, int]]


def app_id_for(pipeline: str, query_id: str) -> str:
    """The txnAppId of a pipeline's streaming query."""
    return f"deltasink:{pipeline}:{query_id}"


def commit_metadata(pipeline: str, app_id: str, batch_id: int, run_id: str,
                    offsets: Offsets, counts: Mapping[str, Any] | None = None,
                    source: Mapping[str, Any] | None = None) -> str:
    """The JSON stored as the commit's userMetadata: who wrote it, and where its input ended.

    Args:
        pipeline: the pipeline name.
        app_id: the txnAppId.
        batch_id: the txnVersion.
        run_id: the run that wrote the commit.
        offsets: the next offsets to read per topic and partition (exclusive end).
        counts: the batch's counts known before the commit (``BatchMetrics.commit_counts``),
            stored under ``batch``: the commit is then the source of truth for its metrics row.
        source: the Kafka cluster id and topic ids the offsets refer to
            (``{"cluster_id": ..., "topic_ids": {...}}``, see ``pipelines.kafka.identity``).
    """
    body: dict[str, Any] = {
        "pipeline": pipeline, "app_id": app_id, "batch_id": batch_id, "run_id": run_id,
        "offsets": {t: {str(p): o for p, o in sorted(ps.items())}
                    for t, ps in sorted(offsets.items())}}
    if counts is not None:
        body[BATCH_KEY] = dict(counts)
    if source:
        body[SOURCE_KEY] = dict(source)
    return json.dumps({METADATA_KEY: body}, separators=(",", ":"))


def parse_commit_metadata(text: str | None) -> dict[str, Any] | None:
    """The deltasink part of a commit's userMetadata, or None for other writers' commits."""
    if not text:
        return None
    try:
        body = json.loads(text).get(METADATA_KEY)
    except (ValueError, AttributeError):
        return None
    return body if isinstance(body, dict) else None


def replay_app_id(pipeline: str, replay_id: str) -> str:
    """The txnAppId of a ``deltasink replay`` run (never the pipeline's own)."""
    return f"deltasink-replay:{pipeline}:{replay_id}"


def mark_replay(metadata: str) -> str:
    """``metadata`` with ``"replay": true``: recorded offsets ignore such commits."""
    body = json.loads(metadata)
    body[METADATA_KEY]["replay"] = True
    return json.dumps(body, separators=(",", ":"))
