"""A local OAuth 2 token endpoint (client credentials) issuing RS256 JWTs, for OIDC logins.

It signs with the embedded broker's OAUTHBEARER signing key, so the broker's
``OAuthBearerValidatorCallbackHandler`` accepts the tokens against its JWKS. Both Kafka clients
log in through it as they would at an identity provider: Spark's Java client with
``OAuthBearerLoginCallbackHandler``, deltasink's own client (librdkafka) with its ``oidc`` method.
A wrong client secret gets HTTP 401.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote

from pipelines.kafka.broker_auth import AUDIENCE


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def sign(key_file: Path, claims: dict[str, object]) -> str:
    """An RS256 JWT of ``claims``, key id ``k1``."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_private_key(key_file.read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    head = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "k1"}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{head}.{body}.{_b64(signature)}"


@dataclass
class TokenEndpoint:
    """Where the endpoint listens, and the tokens it issued (per client id)."""

    url: str
    issued: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


@contextmanager
def token_endpoint(key_file: Path, clients: dict[str, str]) -> Iterator[TokenEndpoint]:
    """Serve ``POST /token`` on a loopback port for ``clients`` (client id -> secret)."""
    endpoint = TokenEndpoint("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
            client, secret = (form.get("client_id", [""])[0], form.get("client_secret", [""])[0])
            basic = self.headers.get("Authorization", "")
            if basic.lower().startswith("basic "):
                pair = base64.b64decode(basic.split(None, 1)[1]).decode()
                client, _, secret = (unquote(part) for part in pair.partition(":"))
            if clients.get(client) != secret or not secret:
                endpoint.refused.append(client)
                self._answer(401, {"error": "invalid_client"})
                return
            now = int(time.time())
            scope = form.get("scope", ["kafka"])[0]
            token = sign(key_file, {"sub": client, "iss": "deltasink-test-idp", "aud": AUDIENCE,
                                    "iat": now, "exp": now + 3600, "scope": scope})
            endpoint.issued[client] = endpoint.issued.get(client, 0) + 1
            self._answer(200, {"access_token": token, "token_type": "Bearer",
                               "expires_in": 3600})

        def _answer(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/token"
    thread = threading.Thread(target=server.serve_forever, name="oidc-token", daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
