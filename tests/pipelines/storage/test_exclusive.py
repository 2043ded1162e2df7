"""Which stores make a write exclusive, and the start-up line where a table's commits are not
(``pipelines/storage/exclusive.py``); where boto3 finds a bucket from S3A's settings
(``pipelines/storage/conditional.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipelines.storage import exclusive
from pipelines.storage.conditional import S3Place
from pipelines.storage.tables import TableRef

DYNAMODB = "io.delta.storage.S3DynamoDBLogStore"


def test_only_s3_outside_databricks_keeps_the_lease_in_an_object() -> None:
    assert exclusive.lease_on_object("s3a://b/_checkpoints/p", databricks=False)
    assert exclusive.lease_on_object("s3://b/_checkpoints/p", databricks=False)
    assert not exclusive.lease_on_object("s3://b/_checkpoints/p", databricks=True)
    for other in ("/lake/_checkpoints/p", "file:///lake/c", "abfss://c@a.dfs.core.windows.net/c",
                  "gs://b/c", "hdfs://nn/c", "dbfs:/c", "/Volumes/main/bronze/v/c"):
        assert not exclusive.lease_on_object(other, databricks=False), other


def test_a_table_on_s3_can_lose_commits_unless_its_scheme_has_the_dynamodb_log_store() -> None:
    assert exclusive.can_lose_commits({}, "s3a://b/orders", databricks=False)
    assert exclusive.can_lose_commits({}, "s3://b/orders", databricks=False)
    assert not exclusive.can_lose_commits({}, "s3://b/orders", databricks=True)
    assert not exclusive.can_lose_commits({}, "/lake/orders", databricks=False)
    assert not exclusive.can_lose_commits({}, "gs://b/orders", databricks=False)
    s3a_only = {"spark.delta.logStore.s3a.impl": DYNAMODB}
    assert not exclusive.can_lose_commits(s3a_only, "s3a://b/orders", databricks=False)
    assert exclusive.can_lose_commits(s3a_only, "s3://b/orders", databricks=False)  # per scheme
    assert not exclusive.can_lose_commits({"spark.delta.logStore.class": DYNAMODB},
                                          "s3://b/orders", databricks=False)
    single = {"spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore"}
    assert exclusive.can_lose_commits(single, "s3a://b/orders", databricks=False)


def test_the_note_names_the_tables_and_delta_s_exact_settings() -> None:
    note = exclusive.lost_commit_note(["target", "quality.metrics"], ["s3a", "s3", "s3a"])
    assert "\n" not in note and note.startswith("note: target, quality.metrics ")
    for setting in (f"spark.delta.logStore.s3.impl={DYNAMODB}",
                    f"spark.delta.logStore.s3a.impl={DYNAMODB}",
                    "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName",
                    "io.delta:delta-storage-s3-dynamodb"):
        assert setting in note


@pytest.fixture
def log_store_unset(spark: SparkSession) -> Iterator[SparkSession]:
    yield spark
    spark.conf.unset("spark.delta.logStore.s3a.impl")


def test_a_run_says_once_when_its_tables_can_lose_a_commit(
        log_store_unset: SparkSession) -> None:
    spark = log_store_unset
    tables = [("target", TableRef(path="s3a://b/orders")),
              ("target.quarantine", TableRef(path="s3a://b/orders_quarantine")),
              ("quality.metrics", TableRef(path="/lake/_quality/run_metrics")),
              ("quality.results", TableRef(name="main.bronze.results"))]
    notes = exclusive.commit_notes(spark, tables)
    assert len(notes) == 1 and notes[0].startswith("note: target, target.quarantine commit")
    assert exclusive.commit_notes(spark, tables[2:]) == []  # nothing on S3: no note
    assert exclusive.commit_notes(spark, tables, databricks=True) == []  # its commit service
    spark.conf.set("spark.delta.logStore.s3a.impl", DYNAMODB)
    assert exclusive.commit_notes(spark, tables) == []


def test_boto3_reaches_a_bucket_as_s3a_does_per_bucket_settings_first() -> None:
    conf = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
            "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.bucket.other.endpoint": "s3.eu-central-1.amazonaws.com",
            "spark.hadoop.fs.s3a.bucket.other.endpoint.region": "eu-central-1",
            "spark.hadoop.fs.s3a.bucket.other.path.style.access": "false",
            "spark.hadoop.fs.s3a.secret.key": "never-read"}
    assert S3Place.of(conf, "lake") == S3Place("http://127.0.0.1:9000", "eu-west-1", True)
    assert S3Place.of(conf, "other") == S3Place("https://s3.eu-central-1.amazonaws.com",
                                                "eu-central-1", False)
    plain = {"spark.hadoop.fs.s3a.endpoint": "minio:9000",
             "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"}
    assert S3Place.of(plain, "lake") == S3Place("http://minio:9000", None, False)
    assert S3Place.of({}, "lake") == S3Place(None, None, False)  # AWS's defaults
