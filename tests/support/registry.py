"""A small schema registry for tests: the Confluent REST calls the serializer and deltasink use.

No real registry runs from PyPI or Maven Central here (Confluent's is on neither; Karapace is
not on PyPI; apicurio-registry-app on Maven Central is a thin Quarkus jar with no main class),
so this implements the documented Confluent Schema Registry API subset, over real HTTP in a
thread, with the registry's own JSON shapes and error codes:

* ``POST /subjects/{s}/versions`` (register; the same schema again keeps its id) and
  ``POST /subjects/{s}`` (look a schema up) — what confluent-kafka's ``AvroSerializer`` calls;
* ``GET /schemas/ids/{id}``, ``GET /subjects``, ``GET /subjects/{s}/versions`` and
  ``GET /subjects/{s}/versions/{v|latest}`` — what deltasink calls.

Optional basic auth answers 401 without the right credentials. ``requests`` logs every call.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_CONTENT = "application/vnd.schemaregistry.v1+json"


@dataclass
class Registry:
    """The registry's state: subjects with their versions, and schemas by id."""

    credentials: tuple[str, str] | None = None
    schemas: dict[int, str] = field(default_factory=dict)
    subjects: dict[str, list[int]] = field(default_factory=dict)  # version i+1 -> id
    requests: list[str] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` under ``subject``; an identical schema keeps its id."""
        with self.lock:
            canonical = json.dumps(json.loads(schema), sort_keys=True)
            sid = next((i for i, s in self.schemas.items() if s == canonical), None)
            if sid is None:
                sid = max(self.schemas, default=0) + 1
                self.schemas[sid] = canonical
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return sid

    def calls(self, prefix: str) -> int:
        """How many requests started with ``prefix`` (``GET /schemas/ids/1``)."""
        return sum(1 for r in self.requests if r.startswith(prefix))


def _handler(registry: Registry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", _CONTENT)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if registry.credentials is None:
                return True
            want = "Basic " + base64.b64encode(":".join(registry.credentials).encode()).decode()
            if self.headers.get("Authorization") == want:
                return True
            self._send(401, {"error_code": 401, "message": "Unauthorized"})
            return False

        def _route(self, method: str) -> None:
            path = urllib.parse.urlsplit(self.path).path
            registry.requests.append(f"{method} {path}")
            if not self._authorized():
                return
            body: Any = None
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
            status, answer = _answer(registry, method, path, body)
            self._send(status, answer)

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

    return Handler


def _not_found(code: int, what: str) -> tuple[int, dict[str, Any]]:
    return 404, {"error_code": code, "message": f"{what} not found"}


def _answer(registry: Registry, method: str, path: str, body: Any
            ) -> tuple[int, Any]:
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if method == "GET" and parts == ["subjects"]:
        return 200, sorted(registry.subjects)
    if method == "GET" and len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
        sid = int(parts[2]) if parts[2].isdigit() else -1
        if sid not in registry.schemas:
            return _not_found(40403, "Schema")
        return 200, {"schema": registry.schemas[sid]}
    if not parts or parts[0] != "subjects" or len(parts) < 2:
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}
    subject = parts[1]
    if method == "POST" and len(parts) == 3 and parts[2] == "versions":
        if body.get("schemaType", "AVRO") != "AVRO":
            return 422, {"error_code": 42201, "message": "only AVRO here"}
        return 200, {"id": registry.register(subject, body["schema"])}
    versions = registry.subjects.get(subject)
    if versions is None:
        return _not_found(40401, f"Subject '{subject}'")
    if method == "POST" and len(parts) == 2:
        canonical = json.dumps(json.loads(body["schema"]), sort_keys=True)
        for number, sid in enumerate(versions, 1):
            if registry.schemas[sid] == canonical:
                return 200, {"subject": subject, "version": number, "id": sid,
                             "schema": registry.schemas[sid]}
        return _not_found(40403, "Schema")
    if method == "GET" and len(parts) == 3 and parts[2] == "versions":
        return 200, list(range(1, len(versions) + 1))
    if method == "GET" and len(parts) == 4 and parts[2] == "versions":
        number = len(versions) if parts[3] == "latest" else (
            int(parts[3]) if re.fullmatch(r"\d+", parts[3]) else 0)
        if not 1 <= number <= len(versions):
            return _not_found(40402, "Version")
        sid = versions[number - 1]
        return 200, {"subject": subject, "version": number, "id": sid,
                     "schema": registry.schemas[sid]}
    return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}


@contextmanager
def running_registry(credentials: tuple[str, str] | None = None) -> Iterator[Registry]:
    """A registry on a free localhost port, for the ``with`` block; ``.url`` is its address."""
    registry = Registry(credentials=credentials)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(registry))
    registry.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
