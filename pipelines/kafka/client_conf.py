"""The pipeline's Kafka options, written for Spark's Java client, as a librdkafka configuration.

``source.options`` are Java-client settings: Spark's Kafka source gets them as ``kafka.*``. The
metadata calls deltasink makes itself (preflight, partitions, topic ids, offsets, lag) use
confluent-kafka (librdkafka) in this process, which needs no JVM and so runs the same beside a
classic session and as a Spark Connect client. This module translates one to the other:

* the same name in both (``security.protocol``, ``client.id``...): as is;
* the SASL login (PLAIN, SCRAM, OAUTHBEARER with OIDC, MSK IAM, Kerberos): :mod:`logins`;
* a trust store: ``ssl.ca.location`` (a JKS or PKCS#12 one is read and written once as PEM,
  :mod:`pipelines.kafka.truststore`), or ``ssl.ca.pem``;
* a key store (mTLS): PEM files as ``ssl.certificate.location``/``ssl.key.location``, PKCS#12 as
  ``ssl.keystore.location``, and a JKS one opened here into ``ssl.key.pem``/``ssl.certificate.pem``
  (:mod:`pipelines.kafka.keystore`);
* ``ssl.endpoint.identification.algorithm`` empty (Java's "off"): ``none``.

A login librdkafka cannot do (a Java callback class, ``databricks.serviceCredential``, Kerberos
on a build without GSSAPI) raises :class:`OwnClientUnavailable`, naming it: the run goes on with
the stream as the only client (:mod:`pipelines.kafka.reach`), never with a preflight that checks
something else than what Spark connects with. Settings that only tune the Java client
(timeouts, deserializers) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pipelines.errors import ConfigError, OwnClientUnavailable
from pipelines.kafka import logins

ClientConfig = dict[str, Any]

#: Same name and meaning in both clients.
_SHARED = ("bootstrap.servers", "security.protocol", "client.id", "ssl.key.password",
           "sasl.kerberos.service.name", "client.rack")
#: Java-client tuning with no bearing on what the metadata calls connect to.
_TUNING = re.compile(r"^(key|value)\.deserializer$|\.ms$|^enable\.auto\.commit$|^group\.id$|"
                     r"^isolation\.level$|^max\.|^fetch\.|^receive\.|^send\.|^metadata\.|"
                     r"^reconnect\.|^retry\.|^retries$|^client\.dns\.lookup$|^auto\.offset|"
                     r"^sasl\.login\.|^sasl\.oauthbearer\.|^sasl\.kerberos\.")
#: Options read with their store, or the login, rather than on their own.
_CONSUMED = {"ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.password",
             "ssl.keystore.password", *logins.CONSUMED}
#: Options for Spark's Kafka source itself, not for a Kafka client (no ``kafka.`` prefix).
SOURCE_OPTIONS = ("databricks.serviceCredential",)


def _store(options: Mapping[str, str], kind: str) -> str:
    return options.get(f"ssl.{kind}.type", "JKS").upper()


def _as_pem(location: str, kind: str, password: str | None) -> str:
    """A JKS or PKCS#12 trust store's certificates as a PEM file (:mod:`truststore`)."""
    from pipelines.kafka.truststore import as_pem_file
    from pipelines.runtime.jvm import cache_dir

    if kind not in ("JKS", "PKCS12"):
        raise ConfigError(f"source.options.ssl.truststore.type: {kind} is not a trust store "
                          "type Kafka knows (JKS, PKCS12, PEM)")
    return as_pem_file(location, kind, password, cache_dir() / "truststores")


def _keystore(options: Mapping[str, str], location: str) -> ClientConfig:
    """The client key and certificate (mTLS) of a PEM, PKCS#12 or JKS key store."""
    kind = _store(options, "keystore")
    if kind == "PKCS12":
        return {"ssl.keystore.location": location,
                **({"ssl.keystore.password": options["ssl.keystore.password"]}
                   if "ssl.keystore.password" in options else {})}
    if kind == "PEM":
        return {"ssl.certificate.location": location, "ssl.key.location": location}
    if kind != "JKS":
        raise ConfigError(f"source.options.ssl.keystore.type: {kind} is not a key store type "
                          "Kafka knows (JKS, PKCS12, PEM)")
    from pipelines.kafka.keystore import jks_key_pair

    pair = jks_key_pair(location, options.get("ssl.keystore.password"),
                        options.get("ssl.key.password"))
    return {"ssl.key.pem": pair.key_pem, "ssl.certificate.pem": pair.chain_pem}


def librdkafka_config(options: Mapping[str, str]) -> ClientConfig:
    """The librdkafka settings equivalent to Java-client ``options``.

    Raises:
        OwnClientUnavailable: librdkafka cannot log in as the stream does (the login named).
        ConfigError: an option is invalid (named; its value is never shown).
    """
    for option in SOURCE_OPTIONS:
        if option in options:
            raise OwnClientUnavailable(f"AWS_MSK_IAM via {option}: Databricks signs the "
                                       "stream's login; no credential reaches this process")
    conf: ClientConfig = {"log_level": 0}
    conf.update(logins.sasl_config(options, options.get("security.protocol", "PLAINTEXT")))
    for key, value in options.items():
        if key in _SHARED:
            conf[key] = value
        elif key == "ssl.endpoint.identification.algorithm":
            conf[key] = value or "none"
        elif key == "ssl.truststore.location":
            kind = _store(options, "truststore")
            conf["ssl.ca.location"] = value if kind == "PEM" else _as_pem(
                value, kind, options.get("ssl.truststore.password"))
        elif key == "ssl.truststore.certificates":
            conf["ssl.ca.pem"] = value
        elif key == "ssl.keystore.location":
            conf.update(_keystore(options, value))
        elif key == "ssl.keystore.certificate.chain":
            conf["ssl.certificate.pem"] = value
        elif key == "ssl.keystore.key":
            conf["ssl.key.pem"] = value
        elif key in _CONSUMED or _TUNING.search(key):
            continue  # read with its store or the login above, or Java-client tuning
        else:
            conf[key] = value  # librdkafka has many same-named options; it rejects the rest
    if "ssl.key.pem" in conf and _store(options, "keystore") == "JKS":
        conf.pop("ssl.key.password", None)  # the key was opened here; it is no longer sealed
    return conf
