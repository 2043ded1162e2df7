"""The driver JVM's file reads give Spark's ``binaryFile`` answers, with no Spark job."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.storage.driver_files import FileRow, driver_files, hidden
from pipelines.storage.store import SparkFiles, Store, named
from tests.support.jobs import spark_jobs


def _tree(root: Path) -> None:
    """A checkpoint-like tree: files, hidden files (``.crc``, ``_x``), hidden and plain folders,
    an empty folder."""
    for rel in ("offsets/0", "offsets/1", "offsets/.0.crc", "commits/0", "_deltasink/g1/x",
                "log/00000000000000000000.json", "log/00000000000000000001.json",
                "log/_last_checkpoint", "log/_commits/tmp", "gens/1/part-0", "gens/2/part-0",
                "gens/2/_SUCCESS", "metadata"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"text of {rel}")
    (root / "empty").mkdir()


def _seen(rows: list[FileRow] | None, root: Path) -> list[tuple[str, bytes | None]] | None:
    if rows is None:
        return None
    return sorted((r.path.split(str(root), 1)[1], r.content) for r in rows)


PATTERNS = ("offsets", "offsets/*", "offsets/1", "offsets/.0.crc", "log/_last_checkpoint",
            "log", "gens/*/*", "gens", "empty", "missing", "offsets/missing*", "_deltasink")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_reads_the_same_files_through_the_driver_as_through_spark(
        spark: SparkSession, tmp_path: Path, pattern: str) -> None:
    _tree(tmp_path)
    driver = driver_files(spark)
    assert driver is not None
    location = f"{tmp_path}/{pattern}"
    for content in (False, True):
        assert _seen(driver.rows(location, content), tmp_path) == \
            _seen(SparkFiles(spark).rows(location, content), tmp_path)
    # first: a file, or a folder's first file; None only when nothing is there
    assert (driver.first(location) is None) == (SparkFiles(spark).first(location) is None)
    assert bool(driver.first(location)) == bool(SparkFiles(spark).first(location))


def test_named_files_are_read_with_their_modification_times_and_no_spark_job(
        spark: SparkSession, tmp_path: Path) -> None:
    _tree(tmp_path)
    folder = f"{tmp_path}/log"
    wanted = ["00000000000000000001.json", "00000000000000000002.json", "_last_checkpoint"]
    store = Store(spark)
    with spark_jobs(spark) as counted:
        found = store.read_many(folder, wanted)
        stamps = store.stamps(folder, wanted)
        names = store.names(f"{tmp_path}/offsets")
        generations = store.below(f"{tmp_path}/gens", "*/*")
    assert counted.jobs == 0
    assert sorted(found) == ["00000000000000000001.json"]  # _last_checkpoint: Spark's rule
    assert found["00000000000000000001.json"][0] == "text of log/00000000000000000001.json"
    modified = (tmp_path / "log" / "00000000000000000001.json").stat().st_mtime * 1000
    assert abs(stamps["00000000000000000001.json"] - modified) < 1000
    assert names == ["0", "1"]
    assert sorted(generations) == ["1/part-0", "2/part-0"]
    assert SparkFiles(spark).rows(named(folder, wanted), True) != []  # Spark's own read agrees
    assert {r.path.rpartition("/")[2] for r in SparkFiles(spark).rows(named(folder, wanted),
                                                                       False)} == set(found)


def test_hidden_names_are_the_ones_spark_leaves_out() -> None:
    assert hidden("_last_checkpoint") and hidden(".0.crc") and hidden("_SUCCESS")
    assert not hidden("_col=1") and not hidden("_metadata") and not hidden("part-0")
