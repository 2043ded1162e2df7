"""Bad inputs nobody tried (issue 33 §3): each fails in one line with a documented exit code, or
lands exactly once.

The cheap ones live here: no JVM of their own (a ``deltasink`` process that fails before it
would start one, or ``pipelines.cli.main`` in-process). The long ones (a Connect server or a
broker killed mid-run, signals, a full disk) are under ``tests/chaos``.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support import runner
from tests.support.configs import write_config

#: A guard against a hang, not a speed threshold: the old behaviour was silence for 10 minutes.
HANG = 120.0


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def deltasink_run(config: Path, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """``deltasink run`` as a process; fails the test with "hung" if it does not end."""
    try:
        return runner.run(config, timeout=HANG, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"deltasink run hung: no exit within {HANG:.0f}s")


def test_a_closed_spark_remote_port_fails_at_once_in_one_line_naming_it(tmp_path: Path) -> None:
    """``spark.remote`` at a port nothing listens on: one line naming ``spark.remote`` and what
    is wrong, exit code 1 (an environment failure), and nothing written. Before issue 33 the run
    printed nothing and retried for 10 minutes."""
    url = f"sc://127.0.0.1:{closed_port()}"
    config = write_config(tmp_path, "127.0.0.1:9", "orders", spark={"remote": url})

    done = deltasink_run(config)

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        f"error: spark.remote {url}: cannot reach the Spark Connect server (connection refused: "
        "nothing listens on that port). Is it running? (`deltasink connect-server` starts one "
        "here)\n"), done.stderr
    assert not (tmp_path / "orders").exists() and not (tmp_path / "_checkpoints").exists()


@pytest.mark.parametrize("where", ["config", "SPARK_REMOTE"])
def test_a_spark_remote_that_is_not_an_sc_url_is_bad_config(tmp_path: Path, where: str) -> None:
    """A wrong scheme, in the config or in ``SPARK_REMOTE``: exit code 2, one line that names
    ``spark.remote`` and the expected form."""
    bad = "http://127.0.0.1:15002"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    if where == "config":
        config = write_config(tmp_path, "127.0.0.1:9", "orders", spark={"remote": bad})
    else:
        config = write_config(tmp_path, "127.0.0.1:9", "orders")
        env["SPARK_REMOTE"] = bad

    done = deltasink_run(config, env=env)

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") <= 2 and "Traceback" not in done.stderr, done.stderr
    assert "spark.remote" in done.stderr and "sc://127.0.0.1:15002" in done.stderr, done.stderr
    assert not (tmp_path / "orders").exists()
