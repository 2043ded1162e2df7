"""Which locations are S3, and the settings a local session gets for them (no JVM here; the
end-to-end runs on moto are in test_s3_pipeline.py)."""

from __future__ import annotations

from pathlib import Path

from pipelines.config.model import PipelineConfig
from pipelines.config.paths import locations
from pipelines.runtime import jvm
from pipelines.storage import s3


def config(**locations: str) -> PipelineConfig:
    raw = {"name": "p", "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["t"]},
           "target": {"path": locations.pop("target", "/lake/orders")},
           "checkpoint": locations.pop("checkpoint", "/lake/_checkpoints/p"),
           "quality": {"results_path": locations.pop("results", "/lake/_quality/results"),
                       "metrics_path": locations.pop("metrics", "/lake/_quality/run_metrics")}}
    return PipelineConfig.model_validate(raw)


def test_s3_and_s3a_uris_are_s3_and_nothing_else_is() -> None:
    assert s3.is_s3("s3://bucket/orders") and s3.is_s3("s3a://bucket/orders")
    assert s3.is_s3("S3A://bucket/orders")
    for other in ("/lake/orders", "file:/lake/orders", "abfss://c@a.dfs.core.windows.net/o",
                  "dbfs:/orders", "/Volumes/main/bronze/v/orders", "s3-archive/orders", "", None):
        assert not s3.is_s3(other), other


def test_any_one_location_on_s3_makes_the_pipeline_an_s3_one() -> None:
    assert not s3.any_s3(locations(config()))
    assert s3.any_s3(locations(config(checkpoint="s3://b/_checkpoints/p")))
    assert s3.any_s3(locations(config(metrics="s3a://b/_quality/run_metrics")))
    # the quarantine's default location follows the target's
    only_target = config(target="s3://b/orders")
    assert "s3://b/orders_quarantine" in locations(only_target)


def test_s3_is_served_by_s3a_for_tables_and_for_streaming_checkpoints() -> None:
    conf = s3.spark_conf()
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.AbstractFileSystem.s3.impl"] == "org.apache.hadoop.fs.s3a.S3A"
    providers = conf["spark.hadoop.fs.s3a.aws.credentials.provider"].split(",")
    assert providers[-1] == "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
    # no endpoint, region or key of ours: those are the user's spark.conf, applied over these
    assert not any("endpoint" in k or "key" in k for k in conf)


def test_the_s3_connector_matches_pysparks_hadoop() -> None:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    hadoop = next(jars.glob("hadoop-client-api-*.jar")).name.removeprefix(
        "hadoop-client-api-").removesuffix(".jar")
    assert jvm.HADOOP_AWS == f"org.apache.hadoop:hadoop-aws:{hadoop}"
