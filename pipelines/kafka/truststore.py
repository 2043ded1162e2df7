"""A Java trust store (JKS or PKCS#12) as the PEM file librdkafka reads (``ssl.ca.location``).

Spark's Kafka source takes ``ssl.truststore.location`` as a JKS or PKCS#12 file, and many teams
keep one. librdkafka reads only PEM, so deltasink's own metadata calls read the store's trusted
certificates here (a JKS store's integrity is checked with ``ssl.truststore.password``, as Java
does) and write them once, as PEM, into deltasink's cache. Private keys are never read.

The store must be readable by this process: a local path, or a mounted one (``/dbfs/...``,
``/Volumes/...``) where the client runs.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from pipelines.errors import ConfigError

_JKS_MAGIC = 0xFEEDFEED
_WHITENER = b"Mighty Aphrodite"


def _read_utf(data: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">H", data, at)
    return data[at + 2:at + 2 + length].decode("utf-8", errors="replace"), at + 2 + length


def jks_entries(data: bytes, password: str | None, option: str = "ssl.truststore.password"
                ) -> list[tuple[bytes | None, list[bytes]]]:
    """A JKS store's entries: each private key's protected blob (None for a trusted
    certificate) with its DER certificates (the key's chain, or the one trusted certificate).
    ``option`` names the password in the error.

    Raises:
        ValueError: not a JKS store, a damaged one, or a wrong password.
    """
    magic, version, count = struct.unpack_from(">III", data, 0)
    if magic != _JKS_MAGIC or version not in (1, 2):
        raise ValueError("not a JKS key store")
    if password is not None:
        digest = hashlib.sha1(password.encode("utf-16-be") + _WHITENER + data[:-20]).digest()
        if digest != data[-20:]:
            raise ValueError(f"its password ({option}) does not open it")
    at, out = 12, []
    for _ in range(count):
        (tag,) = struct.unpack_from(">I", data, at)
        _alias, at = _read_utf(data, at + 4)
        at += 8  # the entry's date
        key: bytes | None = None
        if tag == 1:  # a private key (protected), then its certificate chain
            (size,) = struct.unpack_from(">I", data, at)
            key = data[at + 4:at + 4 + size]
            at += 4 + size
            (chain,) = struct.unpack_from(">I", data, at)
            at += 4
        elif tag == 2:
            chain = 1
        else:
            raise ValueError(f"unknown JKS entry kind {tag}")
        certs = []
        for _ in range(chain):
            if version == 2:
                _kind, at = _read_utf(data, at)
            (size,) = struct.unpack_from(">I", data, at)
            certs.append(data[at + 4:at + 4 + size])
            at += 4 + size
        out.append((key, certs))
    return out


def jks_certificates(data: bytes, password: str | None) -> list[bytes]:
    """The DER certificates of a JKS store's entries (trusted ones and key chains).

    Raises:
        ValueError: not a JKS store, a damaged one, or a wrong password.
    """
    return [cert for _key, certs in jks_entries(data, password) for cert in certs]


def pkcs12_certificates(data: bytes, password: str | None) -> list[bytes]:
    """The DER certificates of a PKCS#12 store.

    Raises:
        ValueError: not a PKCS#12 store, or a wrong password.
    """
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    certs = ([store.cert] if store.cert else []) + list(store.additional_certs)
    return [c.certificate.public_bytes(Encoding.DER) for c in certs]


def pem(der: bytes, label: str = "CERTIFICATE") -> str:
    """``der`` as one PEM block (``label``: CERTIFICATE, PRIVATE KEY)."""
    import base64

    body = base64.b64encode(der).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


def read_store(location: str, kind: str) -> bytes:
    """The bytes of the ``ssl.<kind>.location`` store (``kind``: truststore or keystore).

    Raises:
        ConfigError: this process cannot read it (the option and the reason named).
    """
    try:
        return Path(location.removeprefix("file:")).read_bytes()
    except OSError as exc:
        raise ConfigError(f"source.options.ssl.{kind}.location: cannot read {location} from "
                          f"this process ({exc.strerror or exc}); deltasink's own Kafka "
                          f"metadata calls need the {kind.replace('store', ' store')} here "
                          "too") from None


def as_pem_file(location: str, kind: str, password: str | None, cache: Path) -> str:
    """Write the trusted certificates of the store at ``location`` as one PEM file.

    Args:
        location: the store's path, readable by this process.
        kind: ``JKS`` or ``PKCS12``.
        password: ``ssl.truststore.password`` (None: a JKS store is read unchecked).
        cache: the folder the PEM file goes to (named by the store's content).

    Returns:
        The PEM file's path.

    Raises:
        ConfigError: the store cannot be read, or holds no certificate.
    """
    data = read_store(location, "truststore")
    try:
        ders = (pkcs12_certificates if kind == "PKCS12" else jks_certificates)(data, password)
    except (ValueError, struct.error) as exc:
        raise ConfigError(f"source.options.ssl.truststore.location: {location} is not a "
                          f"readable {kind} trust store ({exc})") from None
    if not ders:
        raise ConfigError(f"source.options.ssl.truststore.location: {location} holds no "
                          "certificate")
    text = "".join(pem(d) for d in ders)
    target = cache / f"truststore-{hashlib.sha256(text.encode()).hexdigest()[:16]}.pem"
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(target)
