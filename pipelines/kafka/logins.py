"""The Java Kafka client's SASL login, as librdkafka settings, where librdkafka can do it.

Java clients log in through a JAAS ``sasl.jaas.config`` naming a login module, and sometimes a
login or client callback class. librdkafka has no JAAS and loads no Java class, so each login
is translated on its own. Class names are matched by their simple name, so the shaded names
Databricks uses (``kafkashaded.org.apache.kafka...``, ``shadedmskiam.software.amazon...``)
translate too.

=================  ================================================  ===========================
login (Java)       what makes it                                     librdkafka
=================  ================================================  ===========================
PLAIN, SCRAM       ``PlainLoginModule`` / ``ScramLoginModule``       ``sasl.username/password``
OAUTHBEARER OIDC   ``OAuthBearerLoginCallbackHandler`` + token URL   ``sasl.oauthbearer.method
                   (clientId, clientSecret, scope in the JAAS)       =oidc`` and its settings
OAUTHBEARER test   ``unsecuredLoginStringClaim_sub`` in the JAAS     an unsecured JWT
MSK IAM            ``IAMLoginModule`` (``AWS_MSK_IAM``), or the      an OAUTHBEARER token from
                   ``IAMOAuthBearerLoginCallbackHandler``            AWS's signer (``msk_iam``)
Kerberos           ``Krb5LoginModule`` (keyTab, principal)           ``sasl.kerberos.*``, when
                                                                     the build has GSSAPI
=================  ================================================  ===========================

Anything else (another callback class, a token endpoint that is a file) raises
:class:`OwnClientUnavailable`: the stream still reads with the options as given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pipelines.errors import ConfigError, OwnClientUnavailable

#: ``key=value`` or ``key="quoted \" value"`` options of a JAAS entry.
_JAAS_OPTION = re.compile(r'([\w.]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;"]+)')
#: The Java options consumed here (their translation is the whole login).
CONSUMED = frozenset({"sasl.jaas.config", "sasl.login.callback.handler.class",
                      "sasl.client.callback.handler.class", "sasl.oauthbearer.token.endpoint.url",
                      "sasl.oauthbearer.scope", "sasl.oauthbearer.client.credentials.client.id",
                      "sasl.oauthbearer.client.credentials.client.secret", "sasl.mechanism"})


def jaas(text: str) -> tuple[str, dict[str, str]]:
    """A JAAS entry's login module (simple class name) and options (unquoted).

    Raises:
        ConfigError: it names no login module (the text is never shown: it holds secrets).
    """
    head = text.strip().split(None, 1)
    if not head or ("." not in head[0] and "LoginModule" not in head[0]):
        raise ConfigError("source.options.sasl.jaas.config: it names no login module; it reads "
                          "'<LoginModule class> required key=\"value\" ...;'")
    options = {k: re.sub(r"\\(.)", r"\1", v[1:-1]) if v.startswith('"') else v
               for k, v in _JAAS_OPTION.findall(head[1] if len(head) > 1 else "")}
    return head[0].rsplit(".", 1)[-1], options


def _simple(name: str | None) -> str:
    return (name or "").strip().rsplit(".", 1)[-1]


def sasl_config(options: Mapping[str, str], protocol: str) -> dict[str, Any]:
    """The librdkafka login settings for the Java client's ``options``.

    Args:
        options: the stream's Kafka options (Java names).
        protocol: ``security.protocol``; a SASL one with no ``sasl.mechanism`` is GSSAPI, as in
            Java.

    Raises:
        OwnClientUnavailable: librdkafka cannot log in this way (the login is named).
        ConfigError: the login is incomplete (the option is named; no value is shown).
    """
    if not protocol.upper().startswith("SASL"):
        return {}
    mechanism = options.get("sasl.mechanism", "GSSAPI").upper()
    module, settings = jaas(options["sasl.jaas.config"]) if "sasl.jaas.config" in options \
        else ("", {})
    login = _simple(options.get("sasl.login.callback.handler.class"))
    client = _simple(options.get("sasl.client.callback.handler.class"))
    if mechanism == "AWS_MSK_IAM" or login == "IAMOAuthBearerLoginCallbackHandler":
        from pipelines.kafka.msk_iam import msk_iam_config

        return msk_iam_config(options, settings)
    if (login and login != "OAuthBearerLoginCallbackHandler") or client:
        raise OwnClientUnavailable(f"{mechanism} through the Java class {login or client}")
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        if module not in ("PlainLoginModule", "ScramLoginModule") or "username" not in settings:
            raise ConfigError(f"source.options.sasl.jaas.config: {mechanism} needs a "
                              "PlainLoginModule or ScramLoginModule with username and password")
        return {"sasl.mechanism": mechanism, "sasl.username": settings["username"],
                "sasl.password": settings.get("password", "")}
    if mechanism == "OAUTHBEARER":
        return _oauthbearer(options, settings, bool(login))
    if mechanism == "GSSAPI":
        return _kerberos(module, settings)
    raise OwnClientUnavailable(f"the SASL mechanism {mechanism}")


def _oauthbearer(options: Mapping[str, str], settings: Mapping[str, str],
                 callback: bool) -> dict[str, Any]:
    """OIDC client credentials, or (no callback class) Kafka's unsecured test tokens."""
    if not callback:
        subject = settings.get("unsecuredLoginStringClaim_sub")
        if subject is None:
            raise OwnClientUnavailable("OAUTHBEARER with no login callback class and no "
                                       "unsecuredLoginStringClaim_sub")
        life = settings.get("unsecuredLoginLifetimeSeconds", "3600")
        return {"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": f"principal={subject} lifeSeconds={life}"}
    url = options.get("sasl.oauthbearer.token.endpoint.url", "")
    if not url.lower().startswith(("http://", "https://")):
        raise OwnClientUnavailable("OAUTHBEARER with a token endpoint that is not http(s)"
                                   if url else "OAUTHBEARER with no token endpoint URL")
    client_id = settings.get("clientId") or options.get(
        "sasl.oauthbearer.client.credentials.client.id")
    secret = settings.get("clientSecret") or options.get(
        "sasl.oauthbearer.client.credentials.client.secret")
    if not client_id or not secret:
        raise ConfigError("source.options.sasl.jaas.config: OAUTHBEARER with a token endpoint "
                          "needs clientId and clientSecret")
    out: dict[str, Any] = {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                           "sasl.oauthbearer.token.endpoint.url": url,
                           "sasl.oauthbearer.client.id": client_id,
                           "sasl.oauthbearer.client.secret": secret}
    scope = settings.get("scope") or options.get("sasl.oauthbearer.scope")
    if scope:
        out["sasl.oauthbearer.scope"] = scope
    extensions = [f"{k.removeprefix('extension_')}={v}" for k, v in sorted(settings.items())
                  if k.startswith("extension_")]
    if extensions:
        out["sasl.oauthbearer.extensions"] = ",".join(extensions)
    return out


def _kerberos(module: str, settings: Mapping[str, str]) -> dict[str, Any]:
    """A ``Krb5LoginModule`` keytab login (a ticket cache needs no settings)."""
    if module and module != "Krb5LoginModule":
        raise OwnClientUnavailable(f"GSSAPI through the login module {module}")
    out: dict[str, Any] = {"sasl.mechanism": "GSSAPI"}
    if settings.get("principal"):
        out["sasl.kerberos.principal"] = settings["principal"]
    if settings.get("keyTab"):
        out["sasl.kerberos.keytab"] = settings["keyTab"]
    return out
