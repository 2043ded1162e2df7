"""The SparkSession: Delta, the Kafka connector and spark-avro, tuned for a small local machine.

On Databricks the runtime already has Delta and Kafka; :func:`get_spark` then returns the
cluster's session untouched, classic or Spark Connect (serverless, standard access mode).

With ``spark.remote`` (or ``SPARK_REMOTE``, as in PySpark) the session is a Spark Connect client:
no JVM starts in this process, and every Spark, Delta and storage call goes to the server. This
module and :func:`pipelines.runtime.sessions.is_connect` are the only places that tell the
two modes apart.

Locally, the driver JVM's own output (Spark's package-resolution log, log4j) goes to
:func:`jvm_log_path` instead of the terminal, so the CLI prints only deltasink's lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config import env
from pipelines.config.model import DEFAULT_MASTER, PipelineConfig
from pipelines.config.paths import locations
from pipelines.errors import EnvironmentSetupError, JarsMissingError
from pipelines.runtime import jvm
from pipelines.runtime.connect_client import bound_retries, check_remote, connect_reason, redact_url
from pipelines.runtime.sessions import SESSION_CONF, on_databricks, remote_url
from pipelines.runtime.signals import note_interrupts
from pipelines.storage import s3

#: JIT settings for a local JVM on a small machine: a method is compiled by C2 only after 8x
#: HotSpot's default calls or loops (``Tier4*``); until then it runs C1-compiled. A short run
#: touches tens of thousands of methods and C2-compiles thousands of merely warm ones, taking
#: CPU from the tasks (measured on 2 cores: 55 s of JIT time in a 43 s run); the per-row loops
#: still reach C2 within a batch. Measurements: bench/README.md, "What was tried for the goals
#: still missed" ("Kept 2026-11-26: C2 only for really hot methods").
SHORT_RUN_JIT = ("-XX:Tier4InvocationThreshold=40000 -XX:Tier4MinInvocationThreshold=20000 "
                 "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000")

#: Settings for a local session. Small shuffles and snapshot partitions matter most: a
#: micro-batch is small, and Delta's default of 50 snapshot partitions dominates its latency.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.extraJavaOptions": SHORT_RUN_JIT,
    "spark.executor.extraJavaOptions": SHORT_RUN_JIT,  # local-cluster[...] executors
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
    # Off, but for a continuous run's target MERGE (target.compact_while_streaming, in
    # pipelines/sink/merge.py merge_settings): on for every statement, a scheduled run's batch
    # ran more Spark jobs than tests/pipelines/test_batch_jobs.py allows (8 against 7). The log
    # reader skips its OPTIMIZE commits (pipelines/ledger/state.py, COMPACTIONS). See
    # docs/performance/continuous.md.
    "spark.databricks.delta.autoCompact.enabled": "false",
    # Spark's checkpoint keeps the offsets and commits of this many batches (Spark's default,
    # stated as the bound the soak checks); deltasink's resume needs only the newest.
    "spark.sql.streaming.minBatchesToRetain": "100",
    "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "false",
    "spark.sql.adaptive.enabled": "true",
    # PySpark's DataFrame debugging records the Python call site of every function call in the
    # JVM, about five Py4J calls for each of the ~160 functions a batch's preparation calls.
    # Measured warm at 5,000 records: the preparation took 1.38 / 1.66 s with it and
    # 0.90 / 0.95 s without (bench/README.md, "Profile"). Errors keep their message, without
    # PySpark's "== DataFrame ==" call-site lines. Read once per process, at the first call.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # VACUUM lists files with this many tasks; the default (10000) takes a minute locally.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
}


def jvm_log_path() -> Path:
    """Where the local driver JVM writes its own output (package resolution, log4j)."""
    return Path(env.setting(env.SPARK_LOG) or jvm.cache_dir() / "spark-driver.log")


def _executor_conf(master: str, packages: tuple[str, ...] = ()) -> dict[str, str]:
    """Executor settings for ``local-cluster[...]``: its executor JVMs run on this machine.

    They are given the package jars on their class path from ~/.m2 directly: jars that reach
    them only through ``spark.jars`` load in a child class loader, where Delta's serialized
    closures fail to deserialize ("cannot assign instance of SerializedLambda").
    """
    if not master.startswith("local-cluster"):
        return {}
    jars = jvm.spark_classpath() + (jvm.s3_classpath() if set(packages) & set(jvm.S3_PACKAGES)
                                    else [])
    return {"spark.executor.extraClassPath": os.pathsep.join(map(str, jars))}


@contextmanager
def _jvm_output_to(path: Path) -> Iterator[None]:
    """Let a JVM spawned inside this block write its stdout/stderr to ``path``, not the terminal.

    The JVM inherits file descriptors 1 and 2 when it starts; ours are restored right after.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = open(path, "ab")  # closed by the with below, once duplicated
    except OSError as exc:
        raise EnvironmentSetupError(
            f"cannot write the Spark driver log {path} ({exc.strerror or exc}); set "
            f"{env.SPARK_LOG} to a writable file") from None
    saved = os.dup(1), os.dup(2)
    with log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def get_spark(
    app_name: str = "deltasink",
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, str] | None = None,
    remote: str | None = None,
    packages: tuple[str, ...] = (),
) -> SparkSession:
    """Return the SparkSession for this process, creating one if needed.

    Args:
        app_name: the Spark application name.
        master: the Spark master (``local[2]``, ``local-cluster[2,1,1024]``, ``spark://...``).
        conf: extra settings, applied last.
        remote: a Spark Connect URL (``sc://host:port``); default ``SPARK_REMOTE``. Set, the
            session is a Connect client and ``master`` is not used.
        packages: Maven coordinates a local session resolves beside Delta, Kafka and Avro
            (the S3 connector, :data:`pipelines.runtime.jvm.S3_PACKAGES`, which ``deltasink
            setup --s3`` must have fetched). Delta's, Kafka's and Avro's are fetched into ~/.m2
            first if they are not there.

    Returns:
        A session with Delta and the Kafka source available.

    Raises:
        EnvironmentSetupError: Java or the JVM jars are missing and cannot be fetched, or the
            Spark Connect server does not answer.
        JarsMissingError: ``packages`` names S3A and its jars are not fetched (a local
            session only: Databricks and Spark Connect servers bring their own).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if on_databricks():
        return SparkSession.builder.getOrCreate()
    url = remote_url(remote)
    if url:
        return _connect(url, conf or {})

    from delta import configure_spark_with_delta_pip

    jvm.require_fetched(packages)  # S3A's jars: fetched only by `deltasink setup --s3`
    jvm.require_java()
    if not jvm.spark_artifacts_cached():
        jvm.fetch()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_CONF, **jvm.spark_conf(), **_executor_conf(master, packages),
                       **(conf or {})}.items():
        builder = builder.config(key, value)
    builder = configure_spark_with_delta_pip(
        builder, extra_packages=[*jvm.SPARK_PACKAGES, *packages])
    with _jvm_output_to(jvm_log_path()):
        spark = builder.getOrCreate()
    note_interrupts()
    spark.sparkContext.setLogLevel(env.setting(env.SPARK_LOG_LEVEL) or "ERROR")
    return spark


def _connect(url: str, conf: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session to ``url``, with deltasink's session settings and ``conf``.

    Only runtime settings can be set on a Connect session: the server owns its static ones
    (memory, packages, extensions), so a static key in ``conf`` fails here in one line. The
    address is probed first (:func:`check_remote`), and every call of the session waits at most
    about a minute for a server that stops answering (:func:`bound_retries`).
    """
    check_remote(url)
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        bound_retries(spark, url)
        for key, value in {**SESSION_CONF, **conf}.items():
            spark.conf.set(key, value)
    except Exception as exc:
        first = connect_reason(exc)
        raise EnvironmentSetupError(
            f"the Spark Connect server at {redact_url(url)} (spark.remote) did not accept the "
            f"session ({first}). Is it running? (`deltasink connect-server` starts one here)"
        ) from None
    return spark


def spark_for(config: PipelineConfig, app_name: str = "deltasink") -> SparkSession:
    """Return the session a pipeline runs on: its ``spark.master`` and ``spark.conf``.

    Args:
        config: the pipeline config.
        app_name: the Spark application name.

    Returns:
        The session (on Databricks, the runtime's own; the config's spark section is ignored).
        A local session of a pipeline with an S3 location gets the S3 connector and its
        settings (:mod:`pipelines.storage.s3`) beneath the config's own ``spark.conf``; other
        pipelines' sessions resolve no S3 jar.

    Raises:
        JarsMissingError: before a JVM starts, for a pipeline on S3 whose jars are not fetched.
    """
    conf = config.spark.spark_conf()
    packages: tuple[str, ...] = ()
    if needs_s3(config):
        conf, packages = {**s3.spark_conf(), **conf}, jvm.S3_PACKAGES
    try:
        return get_spark(app_name, master=config.spark.master, conf=conf,
                         remote=config.spark.remote, packages=packages)
    except JarsMissingError as exc:  # say which pipeline and which of its locations
        where = next(p for p in locations(config) if s3.is_s3(p))
        raise JarsMissingError(f"pipeline {config.name}: {where} is on S3, and {exc}") from None


def needs_s3(config: PipelineConfig) -> bool:
    """Whether a local session for ``config`` needs S3A's jars: a location on S3, and no Spark
    Connect server (whose jars are its own)."""
    return s3.any_s3(locations(config)) and not remote_url(config.spark.remote)
