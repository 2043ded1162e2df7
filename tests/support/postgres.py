"""A real PostgreSQL for the CDC tests: Debian's ``postgresql`` package, ``wal_level=logical``.

The server runs from a folder of its own under the system temp folder, not under pytest's
``tmp_path``: Postgres refuses to run as root, so as root it runs as the ``postgres`` user, who
cannot enter root's ``/tmp/pytest-of-root`` (mode 0700). It listens on a loopback port outside
the ephemeral range (:mod:`pipelines.runtime.ports`) and on a socket in that same folder.

SQL goes through ``psql`` (the client is installed wherever the server is): a test sends a few
dozen statements, so a process per call costs nothing that matters, and the tests need no
database driver (psycopg) of their own. Authentication is ``trust`` on loopback only.

``.ci/ensure-postgres.sh`` installs the server where it is missing.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.runtime.ports import free_ports

BIN = Path("/usr/lib/postgresql/15/bin")
USER = "postgres"
#: Logical decoding for Debezium (pgoutput), and no durability the tests do not need.
SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "16",
    "max_wal_senders": "16",
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "40",
}


def _as_postgres() -> dict[str, Any]:
    """``Popen`` arguments that run a child as the ``postgres`` user when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": USER, "group": USER, "extra_groups": []}


@dataclass
class PostgresServer:
    """One Postgres cluster in ``folder`` (``data/``, the socket, ``server.log``)."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> PostgresServer:
        """A new, not yet started server: its folder made, owned by the user it runs as."""
        if not (BIN / "postgres").exists():
            raise RuntimeError(f"{BIN / 'postgres'} is missing: run `bash .ci/ensure-postgres.sh`")
        folder = Path(tempfile.mkdtemp(prefix="deltasink-pg-"))
        if os.geteuid() == 0:
            entry = pwd.getpwnam(USER)
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        return cls(folder, free_ports(1))

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """initdb once (``trust`` auth, UTF-8), then start the server and wait until it answers."""
        if not self.data.exists():
            subprocess.run([str(BIN / "initdb"), "-D", str(self.data), "-U", USER, "-E", "UTF8",
                            "--locale=C.UTF-8", "--auth=trust", "--no-sync", "--no-instructions"],
                           check=True, capture_output=True, **_as_postgres())
        options = [f"-c{key}={value}" for key, value in SETTINGS.items()]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [str(BIN / "postgres"), "-D", str(self.data), "-p", str(self.port),
                 "-k", str(self.folder), *options],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, **_as_postgres())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}:\n"
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            ready = subprocess.run([str(BIN / "pg_isready"), "-q", "-h", "127.0.0.1",
                                    "-p", str(self.port)], check=False)
            if ready.returncode == 0:
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"postgres did not start in {timeout:.0f}s")

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT: no waiting for clients, such as Debezium), then SIGKILL."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def remove(self) -> None:
        """Stop the server and delete its folder."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def database(self, name: str) -> Database:
        """Create the database ``name`` and return its client.

        A database of that name is dropped first, with the replication slots left on it (a
        slot keeps a database from being dropped).
        """
        admin = Database(self, "postgres")
        admin.sql(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                  f"WHERE database = '{name}'")
        admin.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE); CREATE DATABASE "{name}"')
        return Database(self, name)


@dataclass(frozen=True)
class Database:
    """A client of one database of a :class:`PostgresServer`, as its superuser."""

    server: PostgresServer
    name: str

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def user(self) -> str:
        return USER

    def sql(self, statements: str) -> list[list[str]]:
        """Run ``statements`` in one ``psql`` session (each its own transaction unless wrapped
        in BEGIN/COMMIT); stop at the first error.

        Returns:
            The rows the statements printed, each a list of its fields as text (NULL is ``""``).

        Raises:
            RuntimeError: a statement failed (with psql's message).
        """
        proc = subprocess.run(
            [str(BIN / "psql"), "-X", "-q", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1",
             "-h", self.host, "-p", str(self.port), "-U", USER, "-d", self.name],
            input=statements, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"psql failed ({proc.returncode}): {proc.stderr.strip()}")
        return [line.split("\x1f") for line in proc.stdout.splitlines() if line]

    def value(self, query: str) -> str:
        """The single value ``query`` returns."""
        rows = self.sql(query)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise RuntimeError(f"expected one value from {query!r}, got {rows!r}")
        return rows[0][0]
