"""A schema registry that misbehaves (issue 33 §3): 5xx, no answer, or answers of the wrong
shape. Each is one :class:`RegistryError` line naming the registry and the call, never a
``KeyError`` or a silently wrong list.

The registry here is a real HTTP server on localhost that answers what each case sets; the
client is deltasink's own. The run-level behaviour (one line, exit 1, no table created) is in
``tests/pipelines/test_bad_inputs.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pipelines.errors import RegistryError
from pipelines.kafka.registry import RegistryClient


@contextmanager
def answering(status: int, body: bytes, delay: float = 0.0,
              content_type: str = "application/json") -> Iterator[str]:
    """An HTTP server on a free port that answers every GET with ``status`` and ``body`` after
    ``delay`` seconds; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up waiting
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("status", "body", "call", "expected"), [
    pytest.param(503, b'{"error_code": 50301, "message": "Service\\nUnavailable"}', "schema",
                 "GET /schemas/ids/1: HTTP 503: Service Unavailable (the registry failed; "
                 "nothing was read, run again once it answers)", id="503-with-message"),
    pytest.param(500, b"<html>boom</html>", "subjects",
                 "GET /subjects: HTTP 500: Internal Server Error (the registry failed;",
                 id="500-html"),
    pytest.param(200, b"<html>login</html>", "subjects",
                 "GET /subjects: the answer is not JSON (b'<html>login</html>'); is "
                 "registry_url the schema registry's address?", id="200-html"),
    pytest.param(200, b"\xff\xfe{}", "subjects", "GET /subjects: the answer is not JSON",
                 id="200-not-utf8"),
    pytest.param(200, b'{"subjects": ["a"]}', "subjects",
                 "GET /subjects: malformed answer, expected a list of subject names",
                 id="subjects-an-object"),
    pytest.param(200, b'["1", 2]', "versions",
                 "GET /subjects/t-value/versions: malformed answer, expected a list of version "
                 "numbers", id="versions-strings"),
    pytest.param(200, b'{"schemaType": "AVRO"}', "schema",
                 'GET /schemas/ids/1: malformed answer, expected an object with a "schema" '
                 "string", id="schema-missing"),
    pytest.param(200, b'{"id": "x", "schema": "{}"}', "ids",
                 'malformed answer, expected an object with an "id" and a "schema"',
                 id="version-without-int-id"),
])
def test_a_misbehaving_registry_is_one_registry_error_line(
        status: int, body: bytes, call: str, expected: str) -> None:
    with answering(status, body) as url:
        client = RegistryClient(url, timeout=5)
        calls = {"schema": lambda: client.schema(1), "subjects": client.subjects,
                 "versions": lambda: client.versions("t-value"),
                 "ids": lambda: client.ids(["t-value"])}
        if call == "ids":  # the version list answers, the version itself is malformed
            client.versions = lambda _subject: [1]  # type: ignore[method-assign]
        with pytest.raises(RegistryError) as caught:
            calls[call]()
    message = str(caught.value)
    assert message.startswith(f"schema registry {url}: "), message
    assert expected in message, message
    assert "\n" not in message


def test_a_registry_that_does_not_answer_in_time_names_the_timeout_setting() -> None:
    with answering(200, b"[]", delay=3.0) as url:
        client = RegistryClient(url, timeout=0.5)
        with pytest.raises(RegistryError) as caught:
            client.subjects()
    assert str(caught.value) == (f"schema registry {url}: GET /subjects: no answer within 0.5s "
                                 "(source.avro.registry_timeout)")


def test_a_well_formed_answer_still_reads() -> None:
    """Never trust a no-op: the shape checks accept the registry's real answers."""
    with answering(200, b'{"schema": "\\"string\\""}') as url:
        assert RegistryClient(url).schema(7) == '"string"'
    with answering(200, b'["orders-value", "clicks-value"]') as url:
        assert RegistryClient(url).subjects() == ["orders-value", "clicks-value"]
