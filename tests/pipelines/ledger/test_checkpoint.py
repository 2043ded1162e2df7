"""A checkpoint is retired by a record written through Spark, never by a move or a delete."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import CheckpointError
from pipelines.ledger import checkpoint
from pipelines.storage.store import Store


def test_a_checkpoint_is_its_root_until_retired_then_each_retirement_starts_a_generation(
        spark: SparkSession, lake: Path) -> None:
    root = str(lake / "ckpt")
    assert checkpoint.active(spark, root) == root  # nothing there yet: no generation record
    (lake / "ckpt" / "offsets").mkdir(parents=True)
    (lake / "ckpt" / "offsets" / "0").write_text("v1\n{}\n{\"t\":{\"0\":5}}\n")

    first = checkpoint.retire(spark, root, "rolled back")
    assert first == f"{root}/_deltasink/g1"
    assert checkpoint.active(spark, root) == first
    assert not checkpoint.has_state(spark, first)  # the next run starts a fresh query there
    assert checkpoint.planned_offsets(spark, root, 0) == {"t": {0: 5}}  # the old one is kept

    second = checkpoint.retire(spark, root)
    assert second == checkpoint.active(spark, root) == f"{root}/_deltasink/g2"
    records = Store(spark).below(f"{root}/_deltasink/generations", "*/part-*")
    assert sorted(path.split("/")[0] for path in records) == ["1", "2"]
    text = spark.read.text(f"{root}/_deltasink/generations/1").first()[0]  # type: ignore[index]
    assert f"retired {root}: rolled back" in text


def test_deleting_the_active_generation_does_not_bring_a_retired_one_back(
        spark: SparkSession, lake: Path) -> None:
    root = str(lake / "ckpt")
    (lake / "ckpt").mkdir()
    fresh = checkpoint.retire(spark, root)
    (Path(fresh) / "offsets").mkdir(parents=True)  # a run started there ...
    (Path(fresh) / "offsets" / "0").write_text("v1\n{}\n{}\n")
    shutil.rmtree(fresh)  # ... and its folder was deleted by hand, as the advice says
    assert checkpoint.active(spark, root) == fresh


class RacingWriter:
    """A DataStreamWriter whose ``start`` fails as Spark's does for a second query racing it."""

    def __init__(self, error: str) -> None:
        self.error = error

    def start(self) -> None:
        raise RuntimeError(self.error)


def test_a_query_started_at_the_same_moment_is_a_checkpoint_error(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    race = ("An error occurred while calling o41250.start.\n: org.apache.spark."
            "SparkConcurrentModificationException: Multiple streaming queries are concurrently "
            "using metadata.")  # seen in make chaos: machine c started as the first run did
    with pytest.raises(CheckpointError, match=r"another run is starting a query on checkpoint "
                                              r".*ckpt at the same moment"):
        checkpoint.start(RacingWriter(race), location, "p")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="something else"):
        checkpoint.start(RacingWriter("something else"), location, "p")  # type: ignore[arg-type]
