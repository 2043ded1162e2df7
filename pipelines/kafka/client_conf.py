"""The pipeline's Kafka options, written for Spark's Java client, as a librdkafka configuration.

``source.options`` are Java-client settings: Spark's Kafka source gets them as ``kafka.*``. The
metadata calls deltasink makes itself (preflight, partitions, topic ids, offsets, lag) use
confluent-kafka (librdkafka) in this process, which needs no JVM and so runs the same beside a
classic session and as a Spark Connect client. This module translates one to the other:

* the same name in both (``security.protocol``, ``sasl.mechanism``, ``client.id``...): as is;
* a JAAS ``PlainLoginModule`` / ``ScramLoginModule`` with ``username``/``password``:
  ``sasl.username`` / ``sasl.password``;
* a trust store: ``ssl.ca.location`` (a JKS or PKCS#12 one is read and written once as PEM,
  :mod:`pipelines.kafka.truststore`), or ``ssl.ca.pem``; PEM key stores:
  ``ssl.certificate.location`` and ``ssl.key.location``; a PKCS#12 key store:
  ``ssl.keystore.location``;
* ``ssl.endpoint.identification.algorithm`` empty (Java's "off"): ``none``.

What librdkafka cannot do (a JKS key store, a Java login or callback class, Kerberos or OAUTHBEARER
through JAAS) is refused in one line naming the option: never dropped, so a preflight never
passes while checking something else than what Spark will connect with. Settings that only tune
the Java client (timeouts, deserializers) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pipelines.config.secrets import JAAS_CREDENTIAL
from pipelines.errors import ConfigError

ClientConfig = dict[str, str | int | float | bool]

#: Same name and meaning in both clients.
_SHARED = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "client.id",
           "ssl.key.password", "sasl.kerberos.service.name", "client.rack")
#: Java-client tuning with no bearing on what the metadata calls connect to.
_TUNING = re.compile(r"^(key|value)\.deserializer$|\.ms$|^enable\.auto\.commit$|^group\.id$|"
                     r"^isolation\.level$|^max\.|^fetch\.|^receive\.|^send\.|^metadata\.|"
                     r"^reconnect\.|^retry\.|^retries$|^client\.dns\.lookup$|^auto\.offset")
_LOGIN_MODULES = ("PlainLoginModule", "ScramLoginModule")


def _refuse(option: str, why: str) -> ConfigError:
    return ConfigError(
        f"source.options.{option}: {why}; deltasink's own Kafka metadata calls (preflight, "
        "offsets, lag) use the Python client (librdkafka), which cannot do that. Use a PEM or "
        "PKCS#12 store, or SASL PLAIN/SCRAM credentials in the JAAS config.")


def _store(options: Mapping[str, str], kind: str) -> str:
    return options.get(f"ssl.{kind}.type", "JKS").upper()


def _as_pem(location: str, kind: str, password: str | None) -> str:
    """A JKS or PKCS#12 trust store's certificates as a PEM file (:mod:`truststore`)."""
    from pipelines.kafka.truststore import as_pem_file
    from pipelines.runtime.jvm import cache_dir

    if kind not in ("JKS", "PKCS12"):
        raise _refuse("ssl.truststore.type", f"a {kind} trust store")
    return as_pem_file(location, kind, password, cache_dir() / "truststores")


def librdkafka_config(options: Mapping[str, str]) -> ClientConfig:
    """The librdkafka settings equivalent to Java-client ``options``.

    Raises:
        ConfigError: an option librdkafka cannot express (named; its value is never shown).
    """
    conf: ClientConfig = {"log_level": 0}
    for key, value in options.items():
        if key in _SHARED:
            conf[key] = value
        elif key == "sasl.jaas.config":
            if not any(module in value for module in _LOGIN_MODULES):
                raise _refuse(key, "only PlainLoginModule and ScramLoginModule credentials can "
                                   "be used")
            for name, secret in JAAS_CREDENTIAL.findall(value):
                conf[f"sasl.{name}"] = re.sub(r"\\(.)", r"\1", secret)
        elif key == "ssl.endpoint.identification.algorithm":
            conf[key] = value or "none"
        elif key == "ssl.truststore.location":
            kind = _store(options, "truststore")
            conf["ssl.ca.location"] = value if kind == "PEM" else _as_pem(
                value, kind, options.get("ssl.truststore.password"))
        elif key == "ssl.truststore.certificates":
            conf["ssl.ca.pem"] = value
        elif key == "ssl.keystore.location":
            kind = _store(options, "keystore")
            if kind == "PKCS12":
                conf["ssl.keystore.location"] = value
                if "ssl.keystore.password" in options:
                    conf["ssl.keystore.password"] = options["ssl.keystore.password"]
            elif kind == "PEM":
                conf["ssl.certificate.location"] = value
                conf["ssl.key.location"] = value
            else:
                raise _refuse(key, f"a {kind} key store")
        elif key == "ssl.keystore.certificate.chain":
            conf["ssl.certificate.pem"] = value
        elif key == "ssl.keystore.key":
            conf["ssl.key.pem"] = value
        elif key.startswith(("sasl.login.", "sasl.client.", "sasl.oauthbearer.")) and \
                key.endswith((".class", ".url")):
            raise _refuse(key, "a Java login or callback class")
        elif key in ("ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.password",
                     "ssl.keystore.password") or _TUNING.search(key):
            continue  # consumed above, or Java-client tuning
        else:
            conf[key] = value  # librdkafka has many same-named options; it rejects the rest
    return conf
