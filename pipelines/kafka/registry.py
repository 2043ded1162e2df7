"""A client for the Confluent Schema Registry REST API: the few calls deltasink makes.

deltasink reads writer schemas only: ``GET /schemas/ids/{id}``, ``GET /subjects``,
``GET /subjects/{subject}/versions`` and ``GET /subjects/{subject}/versions/{version}``, with
optional HTTP basic auth. A schema is fetched once per id (and a subject's version once) and
cached for the process: registered schemas are immutable. Only a subject's version list is asked
again, once per micro-batch, to see versions registered since.

Every failure is one :class:`RegistryError` line naming the registry and the call; the
credentials never appear in it: an HTTP error (a 5xx says the registry failed), no answer within
the timeout, an answer that is not JSON, or JSON of another shape than the call's (a proxy's
page, another service at that address). Nothing is retried here: the run stops before it commits
the batch, and the next run reads it again.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pipelines.errors import RegistryError

#: The registry's error codes for "no such subject", "no such version", "no such schema".
NOT_FOUND = frozenset({40401, 40402, 40403})


class RegistryClient:
    """Reads Avro writer schemas from one schema registry, caching what never changes.

    Args:
        url: the registry's base URL.
        credentials: basic-auth (user, password), or None.
        timeout: seconds to wait for one HTTP answer.
    """

    def __init__(self, url: str, credentials: tuple[str, str] | None = None,
                 timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._auth = None if credentials is None else "Basic " + base64.b64encode(
            f"{credentials[0]}:{credentials[1]}".encode()).decode("ascii")
        self._schemas: dict[int, str | None] = {}
        self._versions: dict[tuple[str, int], int] = {}

    def _get(self, path: str) -> Any:
        """GET ``path``: its JSON, or None for the registry's "not found" answers."""
        request = urllib.request.Request(f"{self.url}/{path}", headers={
            "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        if self._auth:
            request.add_header("Authorization", self._auth)
        where = f"schema registry {self.url}: GET /{path.split('?')[0]}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            body = _error_body(exc)
            if exc.code == 404 and body.get("error_code", 40401) in NOT_FOUND:
                return None
            if exc.code in (401, 403):
                raise RegistryError(f"{where}: HTTP {exc.code}, the registry refused the "
                                    "credentials (source.avro.registry_user/password)") from None
            message = _one_line(str(body.get("message") or exc.reason))
            if exc.code >= 500:
                message += " (the registry failed; nothing was read, run again once it answers)"
            raise RegistryError(f"{where}: HTTP {exc.code}: {message}") from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                raise RegistryError(f"{where}: no answer within {self.timeout:g}s "
                                    "(source.avro.registry_timeout)") from None
            raise RegistryError(f"{where}: {_one_line(str(reason))}") from None
        try:
            return json.loads(text.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too
            raise RegistryError(f"{where}: the answer is not JSON "
                                f"({_one_line(repr(text[:60]))}); is registry_url the schema "
                                "registry's address?") from None

    def _malformed(self, path: str, what: str) -> RegistryError:
        return RegistryError(f"schema registry {self.url}: GET /{path.split('?')[0]}: malformed "
                             f"answer, expected {what}")

    def schema(self, schema_id: int) -> str | None:
        """The writer schema (Avro JSON text) registered with ``schema_id``, or None if unknown.

        Known schemas are cached for the process; an unknown id is asked again next time.
        """
        if self._schemas.get(schema_id) is None:
            path = f"schemas/ids/{schema_id}"
            found = self._get(path)
            if found is not None and not _is_schema(found):
                raise self._malformed(path, 'an object with a "schema" string')
            self._schemas[schema_id] = _avro_text(found) if found is not None else None
        return self._schemas[schema_id]

    def subjects(self) -> list[str]:
        """Every subject the registry holds."""
        found = self._get("subjects") or []
        if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
            raise self._malformed("subjects", "a list of subject names")
        return found

    def versions(self, subject: str) -> list[int]:
        """The versions of ``subject`` (soft-deleted ones too: old records may use them)."""
        path = f"subjects/{_quote(subject)}/versions?deleted=true"
        found = self._get(path) or []
        if not isinstance(found, list) or not all(_is_int(v) for v in found):
            raise self._malformed(path, "a list of version numbers")
        return [int(v) for v in found]

    def ids(self, subjects: list[str]) -> dict[int, str]:
        """Every Avro schema id registered under ``subjects``, with its schema text.

        One call per subject for its versions; a version never seen before costs one more.
        """
        out: dict[int, str] = {}
        for subject in subjects:
            for version in self.versions(subject):
                key = (subject, version)
                if key not in self._versions:
                    path = f"subjects/{_quote(subject)}/versions/{version}"
                    found = self._get(path)
                    if found is None:
                        continue
                    if not _is_schema(found) or not _is_int(found.get("id")):
                        raise self._malformed(path, 'an object with an "id" and a "schema"')
                    self._versions[key] = int(found["id"])
                    self._schemas.setdefault(int(found["id"]), _avro_text(found))
                text = self.schema(self._versions[key])
                if text is not None:
                    out[self._versions[key]] = text
        return out


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_schema(found: Any) -> bool:
    """Whether a registry answer has the shape of a schema: an object with a schema string."""
    return isinstance(found, dict) and isinstance(found.get("schema"), str)


def _avro_text(found: Any) -> str | None:
    """The schema text of a registry answer, or None when it is not an Avro schema."""
    if not isinstance(found, dict) or found.get("schemaType", "AVRO") != "AVRO":
        return None
    return str(found["schema"])


def _error_body(exc: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        body = json.loads(exc.read().decode("utf-8"))
    except (ValueError, OSError):
        return {}
    return body if isinstance(body, dict) else {}


_clients: dict[tuple[str, tuple[str, str] | None], RegistryClient] = {}


def client_for(url: str, credentials: tuple[str, str] | None,
               timeout: float = 30.0) -> RegistryClient:
    """The process's client for a registry and credentials: its cache lives as long as it."""
    key = (url, credentials)
    if key not in _clients:
        _clients[key] = RegistryClient(url, credentials, timeout)
    return _clients[key]
