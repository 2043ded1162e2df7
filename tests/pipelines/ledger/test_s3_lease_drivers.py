"""Two drivers on one S3 pipeline: the second ``deltasink run`` is refused in one line while the
first streams, and the first lands every event exactly once.

Both are real ``deltasink`` processes with their own JVM, on a config with only the required
keys and S3A's ``spark.conf`` (endpoint, region, path style), every location on ``s3a://`` in
moto's S3 server. The environment has the credentials but not ``AWS_ENDPOINT_URL_S3``: the
lease must find the endpoint where S3A does, in ``spark.conf``. The first run is held in its
batch 1 (``pause_in_batch``) after committing batch 0, so the second starts while it streams.

Against Delta's lease table these two would both take the lease on S3 (Delta's single-driver
log store lets both UPDATE commits land); the lease object's ``If-Match`` lets only one.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections import Counter
from typing import Any

import pytest
import yaml

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from tests.support import runner
from tests.support.s3 import S3Server
from tests.support.s3_objects import keys, s3_config, split, table_rows

pytestmark = pytest.mark.slow


def lease_of(s3_server: S3Server, base: str) -> dict[str, Any]:
    """The checkpoint's lease object, as the test's own client reads it."""
    bucket, key = split(f"{base}/_checkpoints/orders/_deltasink/lease.json")
    body = s3_server.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    found: dict[str, Any] = json.loads(body)
    return found


@pytest.mark.chaos  # two JVMs (~1-2 min here): in `make chaos`; the lease's cases run in make test
def test_a_second_driver_on_an_s3_pipeline_is_refused_while_the_first_streams(
        broker: EmbeddedBroker, s3_server: S3Server,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("s3-two-drivers")
    elsewhere = tmp_path_factory.mktemp("s3-two-drivers-cwd")
    bucket = s3_server.bucket(f"drivers-{uuid.uuid4().hex[:8]}")
    base = f"s3a://{bucket}/bronze"
    topic = f"drivers-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 900, duplicate_rate=0.1,
                          poison_rate=0.01, seed=45)
    path = folder / "orders.yml"
    path.write_text(yaml.safe_dump(s3_config(base, s3_server.endpoint,
                                             broker.bootstrap_servers, topic, 300)))
    env = {k: v for k, v in s3_server.env().items() if k != "AWS_ENDPOINT_URL_S3"}
    gate = folder / "gate"
    gate.mkdir()
    first = subprocess.Popen(
        [runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        cwd=elsewhere, env={**runner.cold_env(env), "DELTASINK_FAULT": f"pause_in_batch={gate}@1"})
    try:
        deadline = time.monotonic() + 600
        while not (gate / "ready-1").exists():  # batch 0 committed, batch 1 in flight
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never reached its batch 1"
            time.sleep(0.5)
        held = lease_of(s3_server, base)
        assert held["pid"] == first.pid and held["token"], held
        second = runner.run(path, env=env, cwd=elsewhere)
        assert first.poll() is None, "the refusal must not disturb the running pipeline"
        assert lease_of(s3_server, base)["token"] == held["token"]
    finally:
        (gate / "go").touch()
        try:
            out, err = first.communicate(timeout=600)
        finally:
            runner.killpg(first)
    assert second.returncode == 1, second.stdout[-2000:] + second.stderr[-2000:]
    said = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and "already running on checkpoint" in said[0], second.stderr
    assert f"pid {first.pid}" in said[0] and "Traceback" not in second.stderr
    assert "batch 0: " not in second.stdout  # it wrote nothing
    assert first.returncode == 0, out[-2000:] + err[-2000:]
    client = s3_server.client()
    ids = Counter(r["event_id"] for r in table_rows(f"{base}/orders", client, ["event_id"]))
    assert set(ids) == set(sent.event_ids) and max(ids.values()) == 1
    spots = Counter((r["kafka_partition"], r["kafka_offset"]) for r in table_rows(
        f"{base}/orders_quarantine", client, ["kafka_partition", "kafka_offset"]))
    assert sum(spots.values()) == len(spots) == sum(sent.poison.values())
    assert lease_of(s3_server, base)["token"] is None  # released at the end
    lease_bucket, checkpoint = split(f"{base}/_checkpoints/orders")
    assert not [k for k in keys(client, lease_bucket, checkpoint) if "lease_table" in k]
    assert "note: target, target.quarantine, quality.results, quality.metrics commit" in out
