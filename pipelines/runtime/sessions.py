"""Which session this is, and the sessions a run opens beside it.

A session is classic (a JVM in this process) or a Spark Connect client; :func:`is_connect` is
the one test of which. A run's own commits (the lease, run metrics, a group's pipelines) use a
session with settings of their own (:func:`side_session`, :func:`own_session`), so they never
pick up a micro-batch's txn or commit metadata. :mod:`pipelines.runtime.spark` opens the first
session.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from pipelines.runtime.connect_client import bound_retries

#: Session settings deltasink relies on in both modes (runtime SQL settings, so a Spark Connect
#: session may set them too): UTC dates, and the Kafka source's admin-based offset fetching.
SESSION_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "false",
}


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_url(configured: str | None = None) -> str | None:
    """The Spark Connect URL to use: ``spark.remote`` from the config, else ``SPARK_REMOTE``."""
    return configured or os.environ.get("SPARK_REMOTE") or None


def session_url(spark: SparkSession) -> str | None:
    """The ``sc://`` URL a Spark Connect session was opened with (its parameters but its session
    id), or None when its client does not say (a runtime's own channel builder).

    PySpark has no public accessor: this reads the client's channel builder, and gives up
    quietly when it is not the default one.
    """
    builder = getattr(getattr(spark, "client", None), "_builder", None)
    endpoint = getattr(builder, "endpoint", None)
    params = getattr(builder, "_params", None)
    if not isinstance(endpoint, str) or not isinstance(params, dict):
        return None
    kept = "".join(f";{k}={v}" for k, v in params.items() if k != "session_id")
    return f"sc://{endpoint}/{kept}"


def side_session(spark: SparkSession, remote: str | None = None) -> SparkSession:
    """A session for the client's own work while a streaming query runs on ``spark``.

    Classic: ``spark`` itself; each micro-batch already runs in a clone of it. Spark Connect:
    the ``foreachBatch`` worker shares the server session it was started from, settings
    included, so the client's own Delta commits (the lease, run metrics) use another session
    and can never pick up a batch's txn or commit metadata (measured: a lease renewal in the
    shared session failed a batch with DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS). The URL is the
    config's, ``SPARK_REMOTE``, or the one ``spark`` was opened with; without any (a runtime's
    own channel), ``spark`` itself.
    """
    url = remote_url(remote) or (session_url(spark) if is_connect(spark) else None)
    if not is_connect(spark) or not url:
        return spark
    side: SparkSession = SparkSession.builder.remote(url).create()
    bound_retries(side, url)
    for key, value in SESSION_CONF.items():
        side.conf.set(key, value)
    return side


def own_session(spark: SparkSession) -> SparkSession:
    """A session with settings of its own, for a thread that commits beside ``spark``'s.

    Delta's txn (``txnAppId``, ``txnVersion``) and commit metadata live in a session's
    settings, so a commit from another thread of the same session would consume them, or find
    them half set. Classic: ``spark.newSession()`` (the same context and tables, its own
    settings). Spark Connect: :func:`side_session`.
    """
    if is_connect(spark):
        return side_session(spark)
    session = spark.newSession()
    for key, value in SESSION_CONF.items():
        session.conf.set(key, value)
    return session


def on_databricks() -> bool:
    """Whether we run inside a Databricks runtime."""
    return "DATABRICKS_RUNTIME_VERSION" in os.environ
