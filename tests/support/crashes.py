"""What a crash at a named fault point must have left behind, checked on the files and tables."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.ledger import state


def assert_killed_over_connect_after_the_target_commit_of_batch_1(
        spark: SparkSession, cfg: PipelineConfig,
        killed: subprocess.CompletedProcess[str]) -> None:
    """``after_target_commit@1`` under Spark Connect kills the server's batch worker, not the
    client: the client exits 1, with batch 1 committed to the target and never by Spark."""
    assert killed.returncode == 1, killed.stdout[-2000:] + killed.stderr[-2000:]
    assert "Traceback" not in killed.stderr, killed.stderr[-3000:]
    checkpoint = Path(cfg.checkpoint)
    assert (checkpoint / "offsets" / "1").exists()  # batch 1 was planned ...
    assert not (checkpoint / "commits" / "1").exists()  # ... and never committed by Spark ...
    committed = {c.batch_id for c in state.sink_commits(spark, cfg.target.ref, cfg.name)}
    assert 1 in committed, committed  # ... but to the target: the kill came after its commit
