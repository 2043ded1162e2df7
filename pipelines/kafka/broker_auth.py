"""The embedded broker's optional authenticated listener: SASL_SSL with SCRAM-SHA-512.

Made once per broker data folder (``auth/``): a CA and a broker key pair generated with the JDK's
``keytool`` (a JKS keystore for the broker, a JKS truststore and a PEM copy of the CA for
clients), a SCRAM user with a random password, and the random store password. Clients read them
from :class:`SaslCredentials`; the SCRAM user is created when the storage is formatted
(``kafka-storage format --add-scram``). Inter-broker and controller traffic stays PLAINTEXT.
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
    ]
    for step in steps:
        proc = subprocess.run([str(keytool), *step, *store], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise BrokerError(f"keytool {step[0]} failed in {folder}: "
                              f"{(proc.stdout + proc.stderr).strip()[:300]}")


def server_properties(creds: SaslCredentials, port: int, sasl_port: int,
                      controller_port: int) -> str:
    """The listener lines of ``server.properties`` with the SASL_SSL listener added."""
    keystore = creds.folder / "broker.keystore.jks"
    return (
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port},"
        f"SASL_SSL://127.0.0.1:{sasl_port}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl_port}\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
        "SASL_SSL:SASL_SSL\n"
        f"sasl.enabled.mechanisms={MECHANISM}\n"
        f"listener.name.sasl_ssl.sasl.enabled.mechanisms={MECHANISM}\n"
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;\n"
        f"ssl.keystore.type=JKS\nssl.keystore.location={keystore}\n"
        f"ssl.keystore.password={creds.store_password}\nssl.key.password={creds.store_password}\n"
        "ssl.client.auth=none\n")


def format_args(creds: SaslCredentials) -> list[str]:
    """The ``kafka-storage format`` arguments that create the SCRAM user."""
    return ["--add-scram", f"{MECHANISM}=[name={creds.user},password={creds.password}]"]
