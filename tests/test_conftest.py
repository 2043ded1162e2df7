"""The test run's own stop (``tests/conftest.py``): a pytest stopped by SIGTERM, as a CI timeout
or ``kill`` stops it, tears its session fixtures down, so the servers they started (here moto's
S3 server, a process of its own) do not outlive it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.runner import outliving

PROBE = '''
import time

def test_hold(s3_server):
    print("READY", s3_server.process.pid, flush=True)
    time.sleep(300)
'''


@pytest.mark.slow
def test_a_sigterm_to_pytest_stops_the_servers_its_session_started(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    log = tmp_path / "pytest.log"
    with log.open("w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
             "-p", "tests.conftest", "--basetemp", str(tmp_path / "bt"),
             str(tmp_path / "test_probe.py")],
            cwd=Path(__file__).resolve().parents[1], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "READY" not in log.read_text() and time.monotonic() < deadline:
            assert run.poll() is None, log.read_text()
            time.sleep(0.5)
        server = int(log.read_text().split("READY", 1)[1].split()[0])
        run.send_signal(signal.SIGTERM)
        run.wait(60)
        left = outliving({server: "moto"}, 30.0)
        assert not left, f"moto's server ({server}) outlived pytest\n{log.read_text()}"
    finally:
        if run.poll() is None:
            run.kill()

