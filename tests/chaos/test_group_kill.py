"""Scenario 9: SIGKILL a group run (three pipelines in one process), then run the group again:
every pipeline lands exactly once (issue 35 §1)."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from quality.backfill import backfill_run_metrics
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config


@pytest.mark.parametrize("profile", PROFILES)
def test_a_sigkilled_group_run_then_a_rerun_is_exact_for_every_pipeline(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(seed)
    bootstrap = broker.bootstrap_servers

    def configure(batch: int) -> list[Path]:
        return [write_config(lake, bootstrap, f"{topic}-{i}", name=f"p{i}",
                             source={"max_records_per_batch": batch},
                             target={"path": str(lake / f"p{i}"),
                                     "quarantine_path": str(lake / f"p{i}_q")})
                for i in range(3)]

    sent = [produce_events(bootstrap, f"{topic}-{i}", profile.small, duplicate_rate=0.1,
                           poison_rate=0.01, seed=seed + i, id_prefix=f"p{i}")
            for i in range(3)]
    paths = configure(max(1, profile.small // 4))
    configs = [load_config(path, environ={}) for path in paths]
    args = [arg for path in paths for arg in ("--config", str(path))]
    # Killed while the group streams, four batches per pipeline, two pipelines at a time. The
    # long profile (make chaos) counts from the first pipeline's first batch commit, so the kill
    # lands after one; the short one (make test) from its checkpoint's lock, 20 s cheaper.
    delay = rng.uniform(0.5, 2.0)
    after_commit = profile.name == "long"
    killed = runner.deltasink(
        "run", *args, "--no-validate", kill_after=delay,
        kill_after_commit=Path(configs[0].target.path or "") if after_commit else None,
        kill_after_lock=None if after_commit else Path(configs[0].checkpoint) / ".deltasink.lock")
    assert killed.returncode == -signal.SIGKILL, (seed, killed.stdout[-2000:],
                                                   killed.stderr[-2000:])
    assert "group: 3 pipelines" in killed.stdout and "ok in" not in killed.stdout, \
        ("the group ended before the kill: it proves nothing", killed.stdout[-2000:])

    # The rerun catches up in one big batch per pipeline, after replaying (with its logged
    # offsets) any batch the kill left uncommitted: the kill is the point, not the batch count.
    assert configure(2 * profile.small) == paths
    capsys.readouterr()
    assert main(["run", *args, "--no-validate"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.rstrip().endswith("group: 3 pipelines, 3 ok, 0 failed"), out[-2000:]
    # p0 committed before the kill; the group's one metrics write never came: backfilled.
    assert "[p0] run metrics: backfilled " in out or not after_commit, out[-3000:]
    verdicts = [check(spark, cfg, events.event_ids, sum(events.poison.values()))
                for cfg, events in zip(configs, sent, strict=True)]
    for verdict in verdicts:
        record("9 group run SIGKILLed, rerun", profile, verdict, f"killed {delay:.1f}s after "
               f"p0's {'first commit' if after_commit else 'lock'}")
    assert all(v.clean for v in verdicts), (seed, verdicts)
    # The run-metrics rows the kill left unwritten were backfilled at the rerun's start, and the
    # rerun's own went in with the group's one write: every committed batch has one row.
    metrics = configs[0].quality.metrics_ref  # the three pipelines share it
    assert all(cfg.quality.metrics_ref == metrics for cfg in configs)
    counts = {r["pipeline"]: (r["rows"], r["keys"]) for r in metrics.read(spark).groupBy(
        "pipeline").agg(F.count("*").alias("rows"),
                        F.countDistinct("query_id", "batch_id").alias("keys")).collect()}
    assert all(counts[cfg.name][0] == counts[cfg.name][1] > 0 for cfg in configs), counts
    assert [backfill_run_metrics(spark, cfg) for cfg in configs] == [[], [], []], seed
