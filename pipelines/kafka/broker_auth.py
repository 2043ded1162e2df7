"""The embedded broker's optional authenticated listeners, one per login kind, on four ports.

From the first port ``P`` (``sasl_port``):

* ``P``: SASL_SSL with SCRAM-SHA-512;
* ``P+1``: SASL_PLAINTEXT with OAUTHBEARER tokens checked by Kafka's own
  ``OAuthBearerValidatorCallbackHandler`` against a JWKS (RS256; the signing key is in
  ``auth/oidc-signing.pem``, for a token endpoint to sign with);
* ``P+2``: SSL with ``ssl.client.auth=required`` (mTLS; a client key store in JKS and PKCS#12);
* ``P+3``: SASL_PLAINTEXT with Kafka's unsecured OAUTHBEARER tokens (for a login only Java
  can do, such as a callback class).

Made once per broker data folder (``auth/``): a CA and a broker key pair generated with the JDK's
``keytool`` (a JKS keystore for the broker, a JKS truststore and a PEM copy of the CA for
clients), a client key pair signed by the CA, a SCRAM user with a random password, and the
random store password. Clients read them from :class:`SaslCredentials`; the SCRAM user is
created when the storage is formatted (``kafka-storage format --add-scram``). Inter-broker and
controller traffic stays PLAINTEXT.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import BrokerError

MECHANISM = "SCRAM-SHA-512"
USER = "deltasink"
_SAN = "SAN=ip:127.0.0.1,dns:localhost"


@dataclass(frozen=True)
class SaslCredentials:
    """What a client of the SASL_SSL listener needs: user, password, CA trust store."""

    folder: Path
    user: str
    password: str
    store_password: str

    @property
    def truststore(self) -> Path:
        """The JKS truststore holding the CA (Java clients: ``ssl.truststore.location``)."""
        return self.folder / "truststore.jks"

    @property
    def client_keystore(self) -> Path:
        """The client's key and CA-signed certificate, JKS (store and key: the store password)."""
        return self.folder / "client.keystore.jks"

    @property
    def client_pkcs12(self) -> Path:
        """The same client key store as PKCS#12 (the store password)."""
        return self.folder / "client.keystore.p12"

    @property
    def oidc_signing_key(self) -> Path:
        """The RSA key (PEM) the OAUTHBEARER listener's JWKS verifies tokens of."""
        return self.folder / "oidc-signing.pem"

    @property
    def jwks(self) -> Path:
        """The listener's JWKS: the public half of :attr:`oidc_signing_key`, key id ``k1``."""
        return self.folder / "jwks.json"

    @property
    def ca_pem(self) -> Path:
        """The CA certificate as PEM (librdkafka clients: ``ssl.ca.location``)."""
        return self.folder / "ca.pem"

    def jaas_config(self, password: str | None = None) -> str:
        """The Java client's ``sasl.jaas.config`` for this user (``password`` to override)."""
        secret = self.password if password is None else password
        return ("org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{self.user}" password="{secret}";')

    def java_options(self, password: str | None = None) -> dict[str, str]:
        """The ``source.options`` a Java client (Spark) connects with."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.jaas.config": self.jaas_config(password),
                "ssl.truststore.location": str(self.truststore),
                "ssl.truststore.type": "JKS", "ssl.truststore.password": self.store_password}

    def librdkafka_options(self) -> dict[str, str]:
        """The confluent-kafka (librdkafka) settings for the same listener."""
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                "sasl.username": self.user, "sasl.password": self.password,
                "ssl.ca.location": str(self.ca_pem)}


def credentials(data_dir: Path, java: str) -> SaslCredentials:
    """The listener's credentials, generated on first use in ``data_dir/auth``.

    Raises:
        BrokerError: ``keytool`` failed.
    """
    folder = data_dir / "auth"
    meta = folder / "credentials.json"
    if meta.exists():
        saved = json.loads(meta.read_text())
        return SaslCredentials(folder, saved["user"], saved["password"], saved["store_password"])
    folder.mkdir(parents=True, exist_ok=True)
    creds = SaslCredentials(folder, USER, f"scram-{secrets.token_hex(12)}",
                            f"store-{secrets.token_hex(12)}")
    _generate_stores(folder, Path(java).with_name("keytool"), creds.store_password)
    _signing_key(creds)
    meta.write_text(json.dumps({"user": creds.user, "password": creds.password,
                                "store_password": creds.store_password}))
    os.chmod(meta, 0o600)
    return creds


def _generate_stores(folder: Path, keytool: Path, password: str) -> None:
    ca, keystore = folder / "ca.jks", folder / "broker.keystore.jks"
    store = ["-storetype", "JKS", "-storepass", password, "-keypass", password]
    steps = [
        ["-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-validity",
         "3650", "-dname", "CN=deltasink-embedded-ca", "-ext", "bc:c", "-keystore", str(ca)],
        ["-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca), "-file",
         str(folder / "ca.pem")],
        ["-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity",
         "3650", "-dname", "CN=localhost", "-ext", _SAN, "-keystore", str(keystore)],
        ["-certreq", "-alias", "broker", "-keystore", str(keystore), "-file",
         str(folder / "broker.csr")],
        ["-gencert", "-rfc", "-alias", "ca", "-keystore", str(ca), "-validity", "3650",
         "-ext", _SAN, "-infile", str(folder / "broker.csr"), "-outfile",
         str(folder / "broker.crt")],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(folder / "ca.pem"),
         "-keystore", str(keystore)],
        ["-importcert", "-noprompt", "-alias", "broker", "-file", str(folder / "broker.crt"),
         "-keystore", str(keystore)],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(folder / "ca.pem"),
         "-keystore", str(folder / "truststore.jks")],
        *_client_steps(folder, ca),
    ]
    for step in [*(s + store for s in steps), _pkcs12_copy(folder, password)]:
        proc = subprocess.run([str(keytool), *step], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise BrokerError(f"keytool {step[0]} failed in {folder}: "
                              f"{(proc.stdout + proc.stderr).strip()[:300]}")


def _client_steps(folder: Path, ca: Path) -> list[list[str]]:
    """keytool steps for the mTLS client's key store: a key pair signed by the CA (JKS)."""
    store, csr, crt = folder / "client.keystore.jks", folder / "client.csr", folder / "client.crt"
    return [
        ["-genkeypair", "-alias", "client", "-keyalg", "RSA", "-keysize", "2048", "-validity",
         "3650", "-dname", "CN=deltasink-client", "-keystore", str(store)],
        ["-certreq", "-alias", "client", "-keystore", str(store), "-file", str(csr)],
        ["-gencert", "-rfc", "-alias", "ca", "-keystore", str(ca), "-validity", "3650",
         "-infile", str(csr), "-outfile", str(crt)],
        ["-importcert", "-noprompt", "-alias", "ca", "-file", str(folder / "ca.pem"),
         "-keystore", str(store)],
        ["-importcert", "-noprompt", "-alias", "client", "-file", str(crt), "-keystore",
         str(store)],
    ]


def _pkcs12_copy(folder: Path, password: str) -> list[str]:
    """The keytool arguments that copy the client's JKS key store to PKCS#12."""
    return ["-importkeystore", "-noprompt", "-srckeystore", str(folder / "client.keystore.jks"),
            "-srcalias", "client", "-destkeystore", str(folder / "client.keystore.p12"),
            "-deststoretype", "PKCS12", "-srcstorepass", password, "-deststorepass", password,
            "-srckeypass", password, "-destkeypass", password]


def _signing_key(creds: SaslCredentials) -> None:
    """The OAUTHBEARER listener's RS256 key pair: the private key (PEM) and its JWKS."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    creds.oidc_signing_key.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    os.chmod(creds.oidc_signing_key, 0o600)
    numbers = key.public_key().public_numbers()

    def b64(number: int) -> str:
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    creds.jwks.write_text(json.dumps({"keys": [{"kty": "RSA", "kid": "k1", "use": "sig",
                                                "alg": "RS256", "n": b64(numbers.n),
                                                "e": b64(numbers.e)}]}))


#: The OAUTHBEARER listener's expected audience (tokens must carry it in ``aud``).
AUDIENCE = "deltasink-test-broker"


def jvm_options(creds: SaslCredentials) -> list[str]:
    """The broker JVM's system properties: Kafka 4 reads a JWKS only from an allowed URL."""
    url = creds.jwks.as_uri()
    return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={url}"]


def server_properties(creds: SaslCredentials, port: int, sasl_port: int,
                      controller_port: int) -> str:
    """The listener lines of ``server.properties`` with the SASL_SSL listener added."""
    keystore = creds.folder / "broker.keystore.jks"
    auth = {"SASL_SSL": sasl_port, "OIDC": sasl_port + 1, "MTLS": sasl_port + 2,
            "UNSECURED": sasl_port + 3}
    listeners = ",".join(f"{name}://127.0.0.1:{p}" for name, p in auth.items())
    oauth = "org.apache.kafka.common.security.oauthbearer"
    return (
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port},"
        f"{listeners}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port},{listeners}\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
        "SASL_SSL:SASL_SSL,OIDC:SASL_PLAINTEXT,MTLS:SSL,UNSECURED:SASL_PLAINTEXT\n"
        f"sasl.enabled.mechanisms={MECHANISM}\n"
        f"listener.name.sasl_ssl.sasl.enabled.mechanisms={MECHANISM}\n"
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;\n"
        "listener.name.oidc.sasl.enabled.mechanisms=OAUTHBEARER\n"
        f"listener.name.oidc.oauthbearer.sasl.jaas.config={oauth}.OAuthBearerLoginModule "
        "required;\n"
        "listener.name.oidc.oauthbearer.sasl.server.callback.handler.class="
        f"{oauth}.OAuthBearerValidatorCallbackHandler\n"
        f"sasl.oauthbearer.jwks.endpoint.url={creds.jwks.as_uri()}\n"
        f"sasl.oauthbearer.expected.audience={AUDIENCE}\n"
        "listener.name.unsecured.sasl.enabled.mechanisms=OAUTHBEARER\n"
        f"listener.name.unsecured.oauthbearer.sasl.jaas.config={oauth}.OAuthBearerLoginModule "
        "required unsecuredLoginStringClaim_sub=\"broker\";\n"
        "listener.name.mtls.ssl.client.auth=required\n"
        f"listener.name.mtls.ssl.truststore.location={creds.truststore}\n"
        f"listener.name.mtls.ssl.truststore.password={creds.store_password}\n"
        f"ssl.keystore.type=JKS\nssl.keystore.location={keystore}\n"
        f"ssl.keystore.password={creds.store_password}\nssl.key.password={creds.store_password}\n"
        "ssl.client.auth=none\n")


def format_args(creds: SaslCredentials) -> list[str]:
    """The ``kafka-storage format`` arguments that create the SCRAM user."""
    return ["--add-scram", f"{MECHANISM}=[name={creds.user},password={creds.password}]"]
