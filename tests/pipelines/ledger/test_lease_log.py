"""The lease checked from its table's newest commit file: proven ours with no Spark job, and
every other answer left to the Delta read."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import CheckpointError
from pipelines.ledger.deltalog import NEAR
from pipelines.ledger.lease import Lease
from pipelines.ledger.lease_log import holder_token, newest_commit, still_ours
from pipelines.storage.store import Store
from tests.support.jobs import spark_jobs


def _commit(*lines: str) -> str:
    return "\n".join(['{"commitInfo":{"operation":"UPDATE"}}', *lines])


def _add(stats: str) -> str:
    return '{"add":{"path":"part-0.parquet","stats":' + stats + "}}"


ROW = ('"{\\"numRecords\\":1,\\"minValues\\":{\\"slot\\":0,\\"token\\":\\"abc\\"},'
       '\\"maxValues\\":{\\"slot\\":0,\\"token\\":\\"abc\\"},\\"nullCount\\":{\\"token\\":0}}"')


def test_a_commit_that_writes_one_held_row_names_its_token() -> None:
    assert holder_token(_commit(_add(ROW), '{"remove":{"path":"part-old.parquet"}}')) == "abc"


@pytest.mark.parametrize("text", [
    _commit(),  # a VACUUM, or an UPDATE that matched nothing: no file added
    _commit(_add(ROW), _add(ROW)),  # two files: not the one-row lease
    _commit(_add('"{\\"numRecords\\":1,\\"minValues\\":{\\"slot\\":0},\\"maxValues\\":'
                 '{\\"slot\\":0},\\"nullCount\\":{\\"token\\":1}}"')),  # a freed row
    _commit(_add('"{\\"numRecords\\":2,\\"minValues\\":{\\"slot\\":0,\\"token\\":\\"abc\\"},'
                 '\\"maxValues\\":{\\"slot\\":0,\\"token\\":\\"abd\\"},'
                 '\\"nullCount\\":{\\"token\\":0}}"')),  # two rows
    _commit('{"add":{"path":"part-0.parquet"}}'),  # no statistics
    _commit(_add('"not json"')),
])
def test_a_commit_that_proves_nothing_names_no_token(text: str) -> None:
    assert holder_token(text) is None


def test_a_held_lease_is_proven_ours_from_its_log_with_no_spark_job(
        spark: SparkSession, tmp_path: Path) -> None:
    lease = Lease(str(tmp_path / "ckpt"), "p")
    lease.acquire(spark)
    lease.renew(spark)
    with spark_jobs(spark) as counted:
        lease.verify(spark, 1)
        lease.verify(spark, 2)  # from the hint the first one kept
    assert counted.jobs == 0
    assert lease._seen == {lease.table: 1}  # created (0), then renewed (1)


def test_a_lease_taken_over_or_released_is_not_proven_ours_and_verify_still_refuses(
        spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    lease = Lease(location, "p")
    lease.acquire(spark)
    lease.release(spark)
    assert not still_ours(spark, lease.table, lease.token)
    other = Lease(location, "p", host="machine-b")
    other.acquire(spark)
    assert not still_ours(spark, lease.table, lease.token)
    assert still_ours(spark, other.table, other.token)
    with pytest.raises(CheckpointError, match="another run is writing"):
        lease.verify(spark, 4)


def test_after_a_commit_that_adds_no_file_the_delta_read_decides(
        spark: SparkSession, tmp_path: Path) -> None:
    lease = Lease(str(tmp_path / "ckpt"), "p")
    lease.acquire(spark)
    lease.tidy(spark)  # a property change and a VACUUM: commits with no row file
    newest = newest_commit(Store(spark), lease.table)
    assert newest is not None and holder_token(newest[1]) is None
    assert not still_ours(spark, lease.table, lease.token)
    lease.verify(spark, 1)  # still ours, by the row itself


def test_a_hint_too_far_behind_finds_the_newest_commit_anyway(
        spark: SparkSession, tmp_path: Path) -> None:
    lease = Lease(str(tmp_path / "ckpt"), "p")
    lease.acquire(spark)
    for _ in range(NEAR + 1):
        lease.renew(spark)
    seen = {lease.table: 0}
    assert still_ours(spark, lease.table, lease.token, seen)
    assert seen == {lease.table: NEAR + 1}
    assert newest_commit(Store(spark), str(tmp_path / "no-table")) is None
