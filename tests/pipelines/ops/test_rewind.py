"""``deltasink rewind``: restore to a version, retire the checkpoint, re-ingest exactly once."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError, SourceError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ops.rewind import rewind
from pipelines.run import run_pipeline
from tests.chaos.test_retention import earliest, set_retention
from tests.support.checker import check
from tests.support.configs import make_config, write_config


def _run(spark: SparkSession, config: PipelineConfig) -> int:
    return run_pipeline(spark, config, validate=False, progress=lambda _l: None).inserted


def _version(spark: SparkSession, config: PipelineConfig) -> int:
    return int(config.target.ref.history(spark, 1).first()["version"])  # type: ignore[index]


@pytest.mark.extended
@pytest.mark.slow
def test_rewind_then_run_reingests_exactly_once(spark: SparkSession, broker: EmbeddedBroker,
                                                lake: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A dry run changes nothing and bad versions are refused; then the rewind and the re-run;
    then a rewind after a manual RESTORE, and the re-run.

    One pipeline's two runs serve all three: the dry run and the refusals, on the state a
    rewind starts from, then the real rewind of that same state, then an operator's RESTORE
    to that version and a rewind to it (until 2026-11-28 a test of its own, with a pipeline
    and two runs of its own: ``make test``'s budget).
    """
    topic = f"rewind-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic)
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    first = produce_events(broker.bootstrap_servers, topic, 800, poison_rate=0.01, seed=1,
                           id_prefix="one")
    _run(spark, cfg)
    after_one = _version(spark, cfg)
    second = produce_events(broker.bootstrap_servers, topic, 700, poison_rate=0.01, seed=2,
                            id_prefix="two")
    _run(spark, cfg)

    # The dry run changes nothing and says what a rewind would do.
    before = (_version(spark, cfg), cfg.target.ref.read(spark).count(),
              sorted(p.name for p in Path(cfg.checkpoint).rglob("*")))
    capsys.readouterr()  # the dry run in-process, on the session JVM (a CLI process costs one)
    assert main(["rewind", "--config", str(path), "--to-version", str(after_one),
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"target      version {before[0]} -> {after_one}" in out
    reread = sum(int(line.split("re-reads ")[1].split()[0]) for line in out.splitlines()
                 if "re-reads" in line)
    assert reread == second.sent, out
    assert out.rstrip().endswith(f"next: deltasink run --config {path}")
    after = (_version(spark, cfg), cfg.target.ref.read(spark).count(),
             sorted(p.name for p in Path(cfg.checkpoint).rglob("*")))
    assert after == before
    # Bad versions are refused, and change nothing either.
    with pytest.raises(ConfigError, match="is not a version of"):
        rewind(spark, cfg, to_version=before[0] + 5, say=lambda _l: None)
    capsys.readouterr()  # and through the CLI's main(), in-process too: exit 2, one line
    assert main(["rewind", "--config", str(path), "--to-version", "99"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "is not a version of" in err, err
    assert _version(spark, cfg) == before[0]

    said: list[str] = []
    rewind(spark, cfg, to_version=after_one, say=said.append)
    assert cfg.target.ref.read(spark).count() == 800  # run 2's rows are gone
    fresh = f"{cfg.checkpoint}/_deltasink/g1"
    assert f"checkpoint {cfg.checkpoint} retired; the next run starts at {fresh}" in said, said
    assert not Path(fresh).exists()  # the old generation is kept; the next run starts the new
    assert (Path(cfg.checkpoint) / "offsets").is_dir()
    assert _run(spark, cfg) == 700  # the next run re-ingests run 2's records
    poison = sum(first.poison.values()) + sum(second.poison.values())
    verdict = check(spark, cfg, first.event_ids + second.event_ids, poison)
    assert verdict.clean, verdict

    # After a manual RESTORE (an operator's, outside deltasink) to the same version, a rewind
    # to it and a run re-ingest run 2's records once more: the log now holds two RESTOREs.
    spark.sql(f"RESTORE TABLE delta.`{cfg.target.ref.path}` TO VERSION AS OF {after_one}")
    assert cfg.target.ref.read(spark).count() == 800
    rewind(spark, cfg, to_version=after_one, say=lambda _l: None)
    assert _run(spark, cfg) == 700
    verdict = check(spark, cfg, first.event_ids + second.event_ids, poison)
    assert verdict.clean, verdict


@pytest.mark.slow
@pytest.mark.slow
def test_rewind_refuses_when_retention_deleted_what_it_would_reread(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"rewind-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, bootstrap, topic)
    produce_events(bootstrap, topic, 200, seed=6, partitions=2, id_prefix="old")
    _run(spark, cfg)
    back_to = _version(spark, cfg)
    produce_events(bootstrap, topic, 200, seed=7, partitions=2, id_prefix="new")
    _run(spark, cfg)  # everything is ingested; then retention deletes what a rewind re-reads
    set_retention(bootstrap, topic, retention_ms="1000", segment_ms="200")
    deadline = time.monotonic() + 120
    while sum(earliest(bootstrap, topic, 2)) < 400:
        assert time.monotonic() < deadline, "retention never deleted the records"
        produce_events(bootstrap, topic, 2, seed=8, partitions=2, id_prefix="roll")
        time.sleep(1)
    set_retention(bootstrap, topic, retention_ms="-1", segment_ms="604800000")
    with pytest.raises(SourceError) as refused:
        rewind(spark, cfg, to_version=back_to, say=lambda _l: None)
    message = str(refused.value)
    assert f"{topic}[0] offsets" in message and "retention already deleted" in message
    assert "\n" not in message
    assert _version(spark, cfg) > back_to  # nothing was restored
