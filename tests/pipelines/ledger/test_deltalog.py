"""Reading a path table's log by file name gives what ``history()`` gives, without listing."""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.ledger.deltalog import NEAR, DeltaLogFiles
from pipelines.storage.store import Store
from pipelines.storage.tables import TableRef

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


def test_the_newest_version_is_found_past_a_hundred_commits_without_a_checkpoint(
        spark: SparkSession, lake: Path) -> None:
    log = lake / "t" / "_delta_log"  # commit files only: the reader goes by their names
    log.mkdir(parents=True)
    for version in range(0, 205):
        info = {"commitInfo": {"operation": "WRITE", "userMetadata": f"v{version}"}}
        (log / f"{version:020d}.json").write_text(json.dumps(info) + "\n")
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert files.latest_version() == 204  # three globs: 0..99, 100..199, 200..299
    newest = files.newest(2)
    assert [(c.version, c.userMetadata) for c in newest or []] == [(204, "v204"), (203, "v203")]


def test_a_version_read_before_finds_the_newest_commits_in_one_read_or_says_it_cannot(
        spark: SparkSession, lake: Path) -> None:
    log = lake / "t" / "_delta_log"
    log.mkdir(parents=True)
    for version in range(0, 50):
        info = {"commitInfo": {"operation": "WRITE", "userMetadata": f"v{version}"}}
        (log / f"{version:020d}.json").write_text(json.dumps(info) + "\n")
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert [c.version for c in files.near(49 - NEAR + 3, 3) or []] == [49, 48, 47]
    assert files.near(10, 3) is None  # 10 + NEAR - 1 exists: there may be newer ones
    assert files.near(60, 3) is None  # the hint is past the log (a replaced table)


def test_a_log_longer_than_three_blocks_is_left_to_delta_not_walked_glob_by_glob(
        spark: SparkSession, lake: Path) -> None:
    # Each glob lists the whole folder; Spark does not read _last_checkpoint (a "_" name), so
    # a walk from version 0 would list it once per 100 versions.
    log = lake / "t" / "_delta_log"
    log.mkdir(parents=True)
    (log / "_last_checkpoint").write_text(json.dumps({"version": 300, "size": 1}))
    for version in range(0, 351):
        (log / f"{version:020d}.json").write_text('{"commitInfo": {"operation": "WRITE"}}\n')
    files = DeltaLogFiles(Store(spark), str(lake / "t"))
    assert files.latest_version() is None
    assert files.newest(3) is None  # state._history then asks DESCRIBE HISTORY
    assert [c.version for c in files.near(349, 3) or []] == [350, 349, 348]  # a batch's read
