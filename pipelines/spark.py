"""The SparkSession: Delta and the Kafka connector, tuned for a small local machine.

On Databricks the runtime already has Delta and Kafka; :func:`get_spark` then returns the
cluster's session untouched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import SparkSession

from pipelines import jvm

#: Settings for a local session. Small shuffles and snapshot partitions matter most: a
#: micro-batch is small, and Delta's default of 50 snapshot partitions dominates its latency.
LOCAL_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.driver.memory": "2g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.autoCompact.enabled": "false",
    "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "false",
    "spark.sql.adaptive.enabled": "true",
}


def on_databricks() -> bool:
    """Whether we run inside a Databricks runtime."""
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def get_spark(
    app_name: str = "deltasink",
    threads: int = 2,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the SparkSession for this process, creating a local one if needed.

    Args:
        app_name: the Spark application name.
        threads: local cores (``local[threads]``).
        conf: extra settings, applied last.

    Returns:
        A session with Delta and the Kafka source available.

    Raises:
        EnvironmentSetupError: Java or the JVM jars are missing and cannot be fetched.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if on_databricks():
        return SparkSession.builder.getOrCreate()

    from delta import configure_spark_with_delta_pip

    jvm.require_java()
    if not jvm.spark_artifacts_cached():
        jvm.fetch()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(f"local[{threads}]").appName(app_name)
    for key, value in {**LOCAL_CONF, **jvm.spark_conf(), **(conf or {})}.items():
        builder = builder.config(key, value)
    builder = configure_spark_with_delta_pip(builder, extra_packages=[jvm.KAFKA_CONNECTOR])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("DELTASINK_SPARK_LOG_LEVEL", "ERROR"))
    return spark
