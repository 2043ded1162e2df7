"""Reading a path table's log by file name gives what ``history()`` gives, without listing."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.ledger.deltalog import NEAR, DeltaLogFiles
from pipelines.storage.store import Store
from pipelines.storage.tables import TableRef
from tests.support.jobs import spark_jobs

FIELDS = ("version", "timestamp", "operation", "operationParameters", "userMetadata")


def _history(spark: SparkSession, path: str) -> list[tuple[object, ...]]:
    rows = TableRef(path=path).history(spark).orderBy("version", ascending=False).collect()
    return [tuple(row[f] for f in FIELDS) for row in rows]


def test_commit_files_read_by_name_match_history_across_a_checkpoint_and_restores(
        spark: SparkSession, lake: Path) -> None:
    path = str(lake / "t")
    for i in range(12):  # versions 0..11: Delta checkpoints at version 10
        (spark.range(i, i + 1).write.format("delta").mode("append")
         .option("userMetadata", f"batch {i}").save(path))
    spark.sql(f"RESTORE TABLE delta.`{path}` TO VERSION AS OF 3")  # version 12
    when = TableRef(path=path).history(spark).filter("version = 5").first()["timestamp"]  # type: ignore[index]
    spark.sql(f"RESTORE TABLE delta.`{path}` TO TIMESTAMP AS OF '{when}'")  # version 13
    assert (lake / "t" / "_delta_log" / "_last_checkpoint").exists()

    log = DeltaLogFiles(Store(spark), path)
    assert log.latest_version() == 13
    read = log.newest(None)
    assert read is not None
    assert [tuple(c[f] for f in FIELDS) for c in read] == _history(spark, path)
    assert [c.version for c in log.newest(3) or []] == [13, 12, 11]


def test_a_folder_without_a_log_is_left_to_delta(spark: SparkSession, lake: Path) -> None:
    (lake / "empty").mkdir()
    assert DeltaLogFiles(Store(spark), str(lake / "empty")).newest(5) is None


def test_the_newest_version_is_found_without_a_checkpoint(spark: SparkSession, lake: Path) -> None:
    path = str(lake / "t")
    for i in range(4):
        spark.range(i, i + 1).write.format("delta").mode("append").save(path)
    assert not (lake / "t" / "_delta_log" / "_last_checkpoint").exists()
    assert DeltaLogFiles(Store(spark), path).latest_version() == 3


def _log(lake: Path, versions: range) -> Path:
    """A ``_delta_log`` of commit files only (the reader goes by their names)."""
    log = lake / "t" / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for version in versions:
        info = {"commitInfo": {"operation": "WRITE", "userMetadata": f"v{version}"}}
        (log / f"{version:020d}.json").write_text(json.dumps(info) + "\n")
    return log


def test_the_newest_version_of_a_long_log_is_found_by_name_in_a_few_spark_jobs(
        spark: SparkSession, lake: Path) -> None:
    _log(lake, range(0, 3000))  # no _last_checkpoint: Spark's file sources would not read it
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    with spark_jobs(spark) as counted:
        newest = files.newest(2)
    assert [(c.version, c.userMetadata) for c in newest or []] == [(2999, "v2999"), (2998, "v2998")]
    assert counted.jobs <= 4  # 0-15 and powers of two; 2048..4096 by 64; 2944..3008 by 2; read
    assert files.latest_version() == 2999


def test_a_cleaned_up_log_is_read_by_name_while_a_power_of_two_is_left_in_it(
        spark: SparkSession, lake: Path) -> None:
    log = _log(lake, range(0, 1101))
    for version in range(0, 700):  # Delta's log cleanup removes the oldest commit files
        (log / f"{version:020d}.json").unlink()
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert [c.version for c in files.newest(3) or []] == [1100, 1099, 1098]  # 1024 is left
    for version in range(700, 1030):
        (log / f"{version:020d}.json").unlink()
    assert files.latest_version() is None  # 1030..1100 holds no power of two
    assert files.newest(3) is None  # state._history then asks DESCRIBE HISTORY


def test_a_log_cleaned_up_past_two_to_the_sixteen_is_found_between_the_powers_of_two(
        spark: SparkSession, lake: Path) -> None:
    # 150,000..156,499 holds no power of two (131,072 and 262,144) but holds 2**(69/4) = 155,872:
    # a table whose log keeps its retention, long after version 0 was cleaned up.
    _log(lake, range(150_000, 156_500))
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert [c.version for c in files.newest(2) or []] == [156_499, 156_498]


def test_a_version_read_before_finds_the_newest_commits_in_one_read_or_says_it_cannot(
        spark: SparkSession, lake: Path) -> None:
    _log(lake, range(0, 50))
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert [c.version for c in files.near(49 - NEAR + 3, 3) or []] == [49, 48, 47]
    assert files.near(10, 3) is None  # 10 + NEAR - 1 exists: there may be newer ones
    assert files.near(60, 3) is None  # the hint is past the log (a replaced table)
