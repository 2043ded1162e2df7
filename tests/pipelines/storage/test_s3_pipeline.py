"""A pipeline on S3 end to end, run as a user runs it: its tables and checkpoint on ``s3a://``
in moto's S3 server, a config with only the required keys and the ``spark.conf`` an S3A user
writes (endpoint, region, path style), credentials from the environment, the ``deltasink``
process started from another folder.

One process for ``make test``, a cold ``run --no-validate`` of one batch: against moto, which
answers one request at a time, the module took 146 s (broker start included) on a 2-core
machine at a load of 11; a run of two batches with its validation took 235 s there. The
validation, the crash and rerun, ``status``, the operator actions (a rolled-back checkpoint,
``rewind``, ``quarantine redrive``, a planted duplicate failing ``validate``) and the README's
own ``s3://`` example are in test_s3_operations.py (``make chaos``).
"""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from tests.support import runner
from tests.support.s3 import ACCESS_KEY, SECRET_KEY, S3Server, count
from tests.support.s3_objects import batches, keys, s3_config, split, verdict

pytestmark = pytest.mark.slow


@dataclass
class Scenario:
    """What the module's run did, and what it left in the bucket."""

    bucket: str
    base: str
    sent: ProduceSummary
    done: subprocess.CompletedProcess[str]
    folder: Path


@pytest.fixture(scope="module")
def scenario(broker: EmbeddedBroker, s3_server: S3Server,
             tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    folder = tmp_path_factory.mktemp("s3-pipeline")
    elsewhere = tmp_path_factory.mktemp("s3-pipeline-cwd")
    bucket = s3_server.bucket(f"lake-{uuid.uuid4().hex[:8]}")
    base = f"s3a://{bucket}/bronze"
    topic = f"s3-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 600, duplicate_rate=0.1,
                          poison_rate=0.01, seed=44)
    path = folder / "orders.yml"  # one batch: each costs 20-30 s against moto under load
    path.write_text(yaml.safe_dump(s3_config(base, s3_server.endpoint,
                                             broker.bootstrap_servers, topic, 10_000)))
    done = runner.run(path, env=s3_server.env(), cwd=elsewhere)
    return Scenario(bucket, base, sent, done, folder)


def test_the_run_lands_its_batch(scenario: Scenario) -> None:
    out = scenario.done.stdout
    assert scenario.done.returncode == 0, out[-3000:] + scenario.done.stderr[-3000:]
    assert "batch 0: " in out, out[-3000:]
    assert "Traceback" not in scenario.done.stderr


def test_every_event_landed_once_and_the_quarantine_is_exact(
        scenario: Scenario, s3_server: S3Server) -> None:
    got = verdict(s3_server.client(), scenario.base, scenario.sent)
    assert not any(got.values()), got


def test_the_tables_and_the_checkpoint_are_in_the_bucket_and_nothing_is_local(
        scenario: Scenario, s3_server: S3Server) -> None:
    """The target, its quarantine, the run metrics and the checkpoint (with its lease); the
    quality results table is written by a validation, on S3 in test_s3_operations.py."""
    client = s3_server.client()
    for table in ("orders", "orders_quarantine", "_quality/run_metrics"):
        bucket, prefix = split(f"{scenario.base}/{table}")
        assert f"{prefix}/_delta_log/00000000000000000000.json" in keys(client, bucket, prefix)
    checkpoint = f"{scenario.base}/_checkpoints/orders"
    assert batches(checkpoint, client, "commits") == [0]
    bucket, prefix = split(checkpoint)
    assert any("/_deltasink/" in k for k in keys(client, bucket, prefix))  # the lease
    local = [p for p in scenario.folder.rglob("*") if p.name != "orders.yml"]
    assert not local, local


def test_no_credential_appears_in_the_output(scenario: Scenario) -> None:
    said = scenario.done.stdout + scenario.done.stderr
    assert SECRET_KEY not in said and ACCESS_KEY not in said


def test_the_request_log_counts_the_tables_by_prefix(scenario: Scenario,
                                                     s3_server: S3Server) -> None:
    """The request log that bench/s3_requests.py counts saw this pipeline's commits and
    listings, by key prefix."""
    lines = s3_server.log.read_text().splitlines()
    counted = count(lines, scenario.bucket, below="bronze/orders/_delta_log/")
    assert counted["PUT"] >= 3 and counted["LIST"] > 0, counted
