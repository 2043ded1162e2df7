"""The test run's own stop (``tests/conftest.py``): a pytest stopped by SIGTERM, as a CI timeout
or ``kill`` stops it, tears its fixtures down, so the servers they started (moto's S3 server,
PostgreSQL, Kafka Connect: processes of their own) do not outlive it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.runner import outliving

#: Probe test files: each prints the pids of the servers it holds, then waits to be stopped.
PROBES = {
    "s3_server": '''
import time

def test_hold(s3_server):
    print("READY", s3_server.process.pid, flush=True)
    time.sleep(300)
''',
    "postgres": '''
import time

def test_hold(postgres):
    print("READY", postgres.process.pid, flush=True)
    time.sleep(300)
''',
    # Kafka Connect and its Postgres, held by a module-scoped fixture as the CDC tests hold them
    "connect": '''
import time

import pytest

from tests.support import debezium
from tests.support.kafka_connect import ConnectWorker

@pytest.fixture(scope="module")
def worker(postgres, broker, tmp_path_factory):
    db = postgres.database("probe")
    db.sql("CREATE TABLE t (id int PRIMARY KEY)")
    worker = ConnectWorker(tmp_path_factory.mktemp("connect"), broker.bootstrap_servers,
                           {"probe": debezium.connector(db, "probe", ["public.t"])})
    try:
        yield worker.start()
    finally:
        worker.stop()

def test_hold(worker, postgres):
    print("READY", worker.process.pid, postgres.process.pid, flush=True)
    time.sleep(300)
''',
}


@pytest.mark.slow
@pytest.mark.parametrize("probe", [
    "s3_server", "postgres", pytest.param("connect", marks=pytest.mark.extended)])
def test_a_sigterm_to_pytest_stops_the_servers_its_session_started(tmp_path: Path,
                                                                   probe: str) -> None:
    (tmp_path / "test_probe.py").write_text(PROBES[probe])
    log = tmp_path / "pytest.log"
    with log.open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
             "-p", "tests.conftest", "--basetemp", str(tmp_path / "bt"),
             str(tmp_path / "test_probe.py")],
            cwd=Path(__file__).resolve().parents[1], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while "READY" not in log.read_text() and time.monotonic() < deadline:
            assert run.poll() is None, log.read_text()
            time.sleep(0.5)
        line = log.read_text().split("READY", 1)[1].splitlines()[0]
        servers = {int(pid): f"{probe} server {n}" for n, pid in enumerate(line.split())}
        run.send_signal(signal.SIGTERM)
        run.wait(60)
        left = outliving(servers, 30.0)
        assert not left, f"{left} outlived pytest\n{log.read_text()}"
    finally:
        if run.poll() is None:
            run.kill()
