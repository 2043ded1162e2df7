"""A run's claim on its checkpoint: the lease taken on a side thread, renewed, released early."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import CheckpointError
from pipelines.ledger.lease import Lease
from pipelines.ledger.single_writer import claim_checkpoint
from tests.pipelines.ledger.test_lease import plant


def _token(spark: SparkSession, location: str) -> str | None:
    held = Lease(location, "p").read(spark)
    return held.token if held is not None else None


def test_the_claim_holds_the_lease_after_wait_and_releases_it_on_exit(
        spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    with claim_checkpoint(spark, location, "p") as claim:
        lease = claim.wait()
        assert _token(spark, location) == lease.token
        lease.verify(spark, 0)
    assert _token(spark, location) is None


def test_a_run_that_fails_before_waiting_still_releases_the_lease_it_took(
        spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    with pytest.raises(RuntimeError, match="tables"), \
            claim_checkpoint(spark, location, "p"):
        raise RuntimeError("a schema check failed in the tables phase")
    assert _token(spark, location) is None
    with claim_checkpoint(spark, location, "p") as claim:  # the next run takes it at once
        claim.wait()


def test_release_soon_frees_the_lease_while_the_run_goes_on(
        spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    with claim_checkpoint(spark, location, "p") as claim:
        lease = claim.wait()
        claim.release_soon()
        deadline = time.monotonic() + 120
        while _token(spark, location) == lease.token and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _token(spark, location) is None  # released before the claim ended
        with pytest.raises(CheckpointError):
            lease.verify(spark, 1)  # nothing may commit under a released lease


def test_a_refused_claim_raises_at_wait_and_leaves_the_holders_lease(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = f"file://{tmp_path / 'ckpt'}"  # no flock: only the lease guards it
    other = plant(spark, location, "machine-a", 12345, age=1)
    monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
    with claim_checkpoint(spark, location, "p") as claim:
        with pytest.raises(CheckpointError, match=r"already running.*machine-a"):
            claim.wait()
    assert _token(spark, location) == other.token


@pytest.mark.parametrize("uri", [False, True])
def test_a_run_that_fails_before_waiting_leaves_a_new_checkpoint_uncreated(
        spark: SparkSession, tmp_path: Path, uri: bool) -> None:
    folder = tmp_path / "new-ckpt"
    location = f"file://{folder}" if uri else str(folder)  # a URI: no flock, the UPDATE runs
    with pytest.raises(RuntimeError), claim_checkpoint(spark, location, "p"):
        time.sleep(2)  # the side thread has tried a free lease meanwhile
        raise RuntimeError("the broker did not answer")
    assert not folder.exists()
    with claim_checkpoint(spark, location, "p") as claim:  # the run that passes its checks
        claim.wait()
        assert folder.is_dir() and _token(spark, location) == claim.lease.token
