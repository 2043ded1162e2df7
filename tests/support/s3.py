"""A real S3 API on loopback for the tests and the bench: moto's server, one request at a time.

moto's own ``moto_server`` serves requests on threads and checks S3's conditions
(``If-None-Match``, ``If-Match``) without a lock, so two conditional writes at once could both
pass there, which S3 itself never allows. This server runs moto's application on werkzeug with
``threaded=False``: requests are handled one after another, so each conditional write is
checked and applied before the next request is read, as S3 guarantees. What that proves and
what it cannot: ``docs/concepts/single-writer.md``.

Every request is appended to a log (``<epoch ms> <KIND> <status> <path>``, a LIST's path
being its bucket and prefix), so a test or a
bench cell can count what a run cost in requests: LIST, GET, HEAD, PUT, COPY, POST, DELETE.

Run as a module: ``python -m tests.support.s3 --port N --log FILE``.
"""

from __future__ import annotations

import argparse
import collections
import os
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Credentials for the server (moto accepts any); the region every client names.
ACCESS_KEY = "deltasink-test"
SECRET_KEY = "deltasink-test-secret"
REGION = "us-east-1"
KINDS = ("LIST", "GET", "HEAD", "PUT", "COPY", "POST", "DELETE")


def kind_of(method: str, path: str, query: str, headers: dict[str, str]) -> str:
    """The S3 request kind of one HTTP request (path-style: ``/<bucket>/<key>``)."""
    key = path.lstrip("/").partition("/")[2]
    if method == "GET":
        return "LIST" if not key or "list-type" in query or "prefix=" in query else "GET"
    if method == "PUT":
        return "COPY" if "x-amz-copy-source" in headers else "PUT"
    return method  # HEAD, POST (multipart, batch delete), DELETE


def _logging(app: Any, log: Path) -> Callable[..., Any]:
    handle = open(log, "a", buffering=1)  # one line per request, flushed at once

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        headers = {k[5:].lower().replace("_", "-"): v for k, v in environ.items()
                   if k.startswith("HTTP_")}
        kind = kind_of(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""),
                       environ.get("QUERY_STRING", ""), headers)
        status: list[str] = []

        def recording(code: str, *args: Any) -> Any:
            status.append(code.split()[0])
            return start_response(code, *args)

        result = app(environ, recording)
        path = environ.get("PATH_INFO", "")
        if kind == "LIST":  # logged as the folder listed, to count requests by key prefix
            query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
            path = f"/{path.strip('/').partition('/')[0]}/{query.get('prefix', [''])[0]}"
        handle.write(f"{int(time.time() * 1000)} {kind} {status[0] if status else '-'} "
                     f"{path}\n")
        return result

    return wsgi


def serve(port: int, log: Path) -> None:
    """Serve moto's S3 on 127.0.0.1:``port``, one request at a time, logging each to ``log``."""
    from moto.moto_server.threaded_moto_server import MotoRequestHandler
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import run_simple

    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, _logging(app, log), threaded=False, use_reloader=False,
               request_handler=MotoRequestHandler)


def client_env(endpoint: str) -> dict[str, str]:
    """What a process needs to reach the server through AWS's default credential chain."""
    return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL_S3": endpoint}


def s3a_conf(endpoint: str) -> dict[str, str]:
    """The ``spark.conf`` an S3A user writes for this endpoint: endpoint, region, path style."""
    return {"spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": REGION,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false"}


@dataclass
class S3Server:
    """moto's S3 in a child process on a loopback port, with its request log."""

    folder: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    buckets: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        """The request log."""
        return self.folder / "requests.log"

    def start(self, timeout: float = 30.0) -> S3Server:
        """Start the server on a free port and wait until it answers."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        out = open(self.folder / "server.out", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.s3", "--port", str(self.port),
             "--log", str(self.log)], stdout=out, stderr=out, start_new_session=True,
            cwd=Path(__file__).resolve().parents[2])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the S3 server exited: {(self.folder / 'server.out')}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the S3 server did not answer within {timeout:.0f}s")

    def client(self) -> Any:
        """A boto3 S3 client of the server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def bucket(self, name: str) -> str:
        """Create bucket ``name`` (once); return it."""
        if name not in self.buckets:
            self.client().create_bucket(Bucket=name)
            self.buckets.append(name)
        return name

    def env(self) -> dict[str, str]:
        """This process's environment with the server's credentials and endpoint."""
        return {**os.environ, **client_env(self.endpoint)}

    def mark(self) -> int:
        """The request log's length now, to count from (:meth:`requests`)."""
        return len(self._lines())

    def requests(self, since: int = 0, bucket: str | None = None) -> collections.Counter[str]:
        """The requests by kind since ``mark`` (optionally only those of ``bucket``)."""
        return count(self._lines()[since:], bucket)

    def _lines(self) -> list[str]:
        try:
            return self.log.read_text().splitlines()
        except FileNotFoundError:
            return []

    def stop(self) -> None:
        """Stop the server."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def count(lines: Iterable[str], bucket: str | None = None,
          below: str | None = None) -> collections.Counter[str]:
    """Requests by kind in log lines, of ``bucket`` (and keys under ``below``) if given."""
    counted: collections.Counter[str] = collections.Counter()
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        path = parts[3].lstrip("/")
        name, _, key = path.partition("/")
        if bucket is not None and name != bucket:
            continue
        if below is not None and not key.startswith(below):
            continue
        counted[parts[1]] += 1
    return counted


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="moto's S3 on loopback, one request at a time")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    serve(args.port, args.log)
