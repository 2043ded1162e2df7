"""What makes a write exclusive on each store, and where deltasink must add to it.

A Delta commit is exclusive when its store lets exactly one writer create a log file: on local
disk and HDFS by an atomic rename without overwrite, on ADLS Gen2 the same (Delta's
``AzureLogStore``), on GCS by a create with a precondition (``GCSLogStore``), and on Databricks'
S3 by its commit service (within one workspace). Open-source Delta's default S3 log store
(``S3SingleDriverLogStore``) is exclusive only inside one JVM: two drivers that commit one
version both succeed and one commit is lost (delta-io/delta#4118), unless every writer uses
``S3DynamoDBLogStore`` with the same DynamoDB table.

So on S3 outside Databricks:

* the checkpoint's lease cannot be a Delta table; it is an S3 object changed only by S3's own
  conditional writes (:func:`lease_on_object`, ``pipelines/ledger/s3_lease.py``);
* the tables' own commits can be lost to a writer in another driver, which the lease cannot see
  (another pipeline on the same bookkeeping tables, a maintenance job): the run says so once at
  its start (:func:`commit_notes`).

The table of stores: ``docs/concepts/single-writer.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from pipelines.storage.s3 import is_s3
from pipelines.storage.tables import TableRef

#: Delta's log store that makes S3 commits exclusive across drivers, and its jar.
DYNAMODB_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
DYNAMODB_JAR = "io.delta:delta-storage-s3-dynamodb"


def scheme(location: str) -> str:
    """The lower-cased URI scheme of ``location`` ("" for a local path)."""
    return urlsplit(location).scheme.lower() if "://" in location else ""


def lease_on_object(location: str, databricks: bool) -> bool:
    """Whether a checkpoint's lease must be an object written with S3's conditional writes:
    on S3 with open-source Spark, where a Delta table's commit is not exclusive."""
    return is_s3(location) and not databricks


def log_store(conf: Mapping[str, str], scheme_: str) -> str | None:
    """The Delta log store set for ``scheme_`` in these Spark settings, if any: Delta's
    ``spark.delta.logStore.<scheme>.impl`` (also read without ``spark.``), or the deprecated
    ``spark.delta.logStore.class`` for every scheme."""
    for key in (f"spark.delta.logStore.{scheme_}.impl", f"delta.logStore.{scheme_}.impl",
                "spark.delta.logStore.class", "delta.logStore.class"):
        if conf.get(key):
            return conf[key].strip()
    return None


def can_lose_commits(conf: Mapping[str, str], location: str, databricks: bool) -> bool:
    """Whether a Delta table at ``location`` commits through a log store that can lose a
    concurrent commit of another driver: S3 outside Databricks with Delta's default
    (single-driver) log store. A log store set explicitly is the user's choice and trusted."""
    if databricks or not is_s3(location):
        return False
    chosen = log_store(conf, scheme(location))
    return chosen is None or chosen.endswith("S3SingleDriverLogStore")


def lost_commit_note(keys: Iterable[str], schemes: Iterable[str]) -> str:
    """The start-up line: which tables can lose a commit, and what to configure."""
    settings = ", ".join(f"spark.delta.logStore.{s}.impl={DYNAMODB_LOG_STORE}"
                         for s in sorted(set(schemes)))
    return (f"note: {', '.join(keys)} commit through Delta's single-driver S3 log store, which "
            "can lose a commit when two Spark drivers write one table at once (this run's "
            "checkpoint lease keeps other runs of this pipeline out, not other writers of the "
            f"tables); for several drivers set {settings} with "
            "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName and .ddb.region and the "
            f"{DYNAMODB_JAR} jar (docs/concepts/single-writer.md)")


def commit_notes(spark: SparkSession, tables: Iterable[tuple[str, TableRef]],
                 databricks: bool = False) -> list[str]:
    """One line when a table the run writes (by path) can lose a concurrent commit, else none.

    Reads the session's settings only when a path is on S3. Tables addressed by catalog name
    are not looked up (their location is the catalog's).

    Args:
        spark: the session whose Delta commits (its settings name the log store).
        tables: (config key, table) of every table the run writes.
        databricks: whether the run is on Databricks, whose S3 commit service makes commits
            exclusive (:func:`pipelines.runtime.sessions.on_databricks`).
    """
    on_path = [(key, str(ref.path)) for key, ref in tables if ref.path and is_s3(str(ref.path))]
    if not on_path or databricks:
        return []
    conf = spark.conf.getAll
    lossy = [(key, path) for key, path in on_path if can_lose_commits(conf, path, False)]
    if not lossy:
        return []
    return [lost_commit_note([key for key, _ in lossy], [scheme(p) for _, p in lossy])]
