"""The checkpoint safety nets on a store Python cannot open: Hadoop's ``viewfs://``.

Every checkpoint read and write goes through Hadoop's FileSystem (``pipelines/runtime/hadoop.py``),
so a checkpoint on ``s3://``, ``abfss://``, ``dbfs:/`` or a Volume gets the same checks as a local
folder. ``viewfs://`` stands in for them here: a Hadoop-only URI (mounted on a temp folder) that
``open()`` and ``os.path`` cannot reach, so a check that fell back to Python file calls would
fail or be skipped, and the test would see it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import CheckpointError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger.lease import Lease
from pipelines.run import run_pipeline
from pipelines.runtime.hadoop import HadoopFS
from pipelines.storage.store import Store
from tests.support.checker import check
from tests.support.configs import make_config


def mount(spark: SparkSession, folder: Path) -> str:
    """A ``viewfs://`` URI whose ``/ckpt`` is ``folder``, known to the session's Hadoop conf."""
    table = f"m{uuid.uuid4().hex[:8]}"
    spark._jsc.hadoopConfiguration().set(  # type: ignore[union-attr]
        f"fs.viewfs.mounttable.{table}.link./ckpt", folder.as_uri())
    return f"viewfs://{table}/ckpt"


def roll_back(fs: HadoopFS, location: str, batches: int) -> None:
    """Delete the newest ``batches`` offsets and commits files, through the FileSystem."""
    ids = sorted(int(n) for n in Store(fs.spark).names(f"{location}/offsets") if n.isdigit())
    for batch in ids[-batches:]:
        for sub in ("offsets", "commits"):
            fs.delete(f"{location}/{sub}/{batch}")
            fs.delete(f"{location}/{sub}/.{batch}.crc")


@pytest.mark.extended
@pytest.mark.slow
def test_rollback_loss_and_second_writer_are_caught_on_a_hadoop_only_checkpoint(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    (lake / "mounted").mkdir()
    root = mount(spark, lake / "mounted")
    checkpoint = f"{root}/orders"
    assert not Path(checkpoint).exists()  # Python cannot see it: only Hadoop can
    topic = f"vfs-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic, checkpoint=checkpoint,
                      source={"max_records_per_batch": 500})
    fs = HadoopFS(spark)
    # Three batches of 500 (1212 records), then two (rolled back ~712 + 252 new), then one.
    sends = [produce_events(broker.bootstrap_servers, topic, 1200, poison_rate=0.01, seed=41)]
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert Store(spark).exists(f"{checkpoint}/offsets/2")

    # Rolled back by two batches while new records arrive: found and recovered.
    sends.append(produce_events(broker.bootstrap_servers, topic, 250, poison_rate=0.01,
                                seed=42, id_prefix="b"))
    roll_back(fs, checkpoint, 2)
    lines: list[str] = []
    run_pipeline(spark, cfg, validate=False, progress=lines.append)
    assert any("checkpoint does not match the target" in line for line in lines), lines
    assert Store(spark).exists(f"{checkpoint}/metadata")  # the old generation is kept
    assert Store(spark).exists(f"{checkpoint}/_deltasink/g1/metadata")  # the run's fresh one

    # Deleted: the run resumes from the offsets the table recorded.
    fs.delete(checkpoint, recursive=True)
    sends.append(produce_events(broker.bootstrap_servers, topic, 400, poison_rate=0.01,
                                seed=43, id_prefix="c"))
    lines.clear()
    run_pipeline(spark, cfg, validate=False, progress=lines.append)
    assert any("resuming from the offsets recorded in the target" in line for line in lines)

    # A live lease of a run on another machine: refused before anything starts.
    other = Lease(checkpoint, cfg.name, host="machine-a", pid=1)
    other.acquire(spark)
    with pytest.raises(CheckpointError, match=r"already running.*machine-a"):
        run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    other.release(spark)

    verdict = check(spark, cfg, [i for s in sends for i in s.event_ids],
                    sum(sum(s.poison.values()) for s in sends))
    assert verdict.clean, verdict
