"""Scenarios 2 and 4: a lost or truncated checkpoint, and one pipeline started twice."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.errors import CheckpointError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from tests.chaos.conftest import LONG, PROFILES, SHORT, Profile, record
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import make_config, write_config


def quiet(_line: str) -> None:
    pass


#: Both profiles in ``make chaos`` only, for the two scenarios that ``make test`` covers more
#: cheaply elsewhere, on the same code paths: a checkpoint deleted and a producer replay sent
#: after it, in ``tests/pipelines/test_run.py`` (test_checkpoint_deletion_loses_and_duplicates_
#: nothing); a truncated newest offsets file refused with the advice, then the advice followed,
#: in ``tests/pipelines/test_bad_inputs.py`` (beside the metadata and commits files).
CHAOS_ONLY = [pytest.param(SHORT, marks=pytest.mark.chaos, id="short"),
              pytest.param(LONG, marks=pytest.mark.chaos, id="long")]


@pytest.mark.parametrize("profile", CHAOS_ONLY)
def test_checkpoint_deleted_between_runs(spark: SparkSession, broker: EmbeddedBroker,
                                         lake: Path, topic: str, profile: Profile,
                                         seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    cfg = make_config(lake, bootstrap, topic, source={"max_records_per_batch": profile.batch})
    ids: list[str] = []
    poison = 0
    for wave in range(profile.rounds):
        sent = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1,
                              poison_rate=0.01, seed=seed + wave, id_prefix=f"w{wave}")
        ids += sent.event_ids
        poison += sum(sent.poison.values())
        if wave:  # a replay of an earlier wave, sent again after the checkpoint was lost
            produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1,
                           poison_rate=0.01, seed=seed, id_prefix="w0")
        run_pipeline(spark, cfg, validate=False, progress=quiet)
        shutil.rmtree(cfg.checkpoint)
    run_pipeline(spark, cfg, validate=False, progress=quiet)
    verdict = check(spark, cfg, ids, poison)
    record("2 checkpoint deleted between runs", profile, verdict, f"{len(ids)} events")
    assert verdict.clean, (seed, verdict)


@pytest.mark.parametrize("profile", CHAOS_ONLY)
def test_truncated_offsets_file_stops_with_advice_that_works(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    # Two batches, so that the truncated offsets file is the newest of several.
    cfg = make_config(lake, bootstrap, topic,
                      source={"max_records_per_batch": max(100, profile.small * 6 // 10)})
    first = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1,
                           poison_rate=0.01, seed=seed, id_prefix="a")
    run_pipeline(spark, cfg, validate=False, progress=quiet)
    offsets = Path(cfg.checkpoint) / "offsets"
    newest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    assert int(newest.name) >= 1, newest
    newest.write_text(newest.read_text()[:40])  # a write cut short by a crash or a full disk
    second = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1,
                            poison_rate=0.01, seed=seed + 1, id_prefix="b")

    with pytest.raises(CheckpointError) as refused:
        run_pipeline(spark, cfg, validate=False, progress=quiet)
    message = str(refused.value)
    assert "is damaged" in message and str(newest) in message
    assert f"Delete the folder {cfg.checkpoint} and run again" in message

    shutil.rmtree(cfg.checkpoint)  # what the message says to do; then finish in big batches
    cfg = make_config(lake, bootstrap, topic, source={"max_records_per_batch": profile.batch})
    run_pipeline(spark, cfg, validate=False, progress=quiet)
    verdict = check(spark, cfg, first.event_ids + second.event_ids,
                    sum(first.poison.values()) + sum(second.poison.values()))
    record("2 truncated offsets file -> advice followed", profile, verdict,
           "CheckpointError, then clean")
    assert verdict.clean, (seed, verdict)


@pytest.mark.parametrize("profile", PROFILES)
def test_same_pipeline_started_twice_is_refused(spark: SparkSession, broker: EmbeddedBroker,
                                                lake: Path, topic: str, profile: Profile,
                                                seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    # Many tiny batches, so that the first process is still busy when the second one starts.
    path = write_config(lake, bootstrap, topic, source={"max_records_per_batch": 50})
    cfg = load_config(path, environ={})
    sent = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1, poison_rate=0.01,
                          seed=seed)
    lock = Path(cfg.checkpoint) / ".deltasink.lock"
    first = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            assert first.poll() is None, "the first run ended before taking its lock"
            assert time.monotonic() < deadline, "the first run never took its lock"
            time.sleep(0.5)
        with pytest.raises(CheckpointError) as refused:  # the second process: this one
            run_pipeline(spark, cfg, validate=False, progress=quiet)
        assert f"pipeline {cfg.name} is already running on checkpoint" in str(refused.value)
        assert first.poll() is None, "the refusal must not disturb the running pipeline"
    finally:
        runner.killpg(first)  # and crash the first one, for good measure
        first.communicate()
    assert first.returncode == -signal.SIGKILL
    # The lock died with its holder; finish in big batches.
    cfg = make_config(lake, bootstrap, topic, source={"max_records_per_batch": profile.batch})
    run_pipeline(spark, cfg, validate=False, progress=quiet)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    record("4 same pipeline twice on one checkpoint", profile, verdict,
           "second refused (CheckpointError)")
    assert verdict.clean, (seed, verdict)
