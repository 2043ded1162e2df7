"""A Java JKS key store (mTLS) as the PEM key and certificate chain librdkafka takes.

Spark's Kafka source takes ``ssl.keystore.location`` as a JKS file, the Java default, and many
self-hosted clusters hand those out. librdkafka reads PEM or PKCS#12 only, so deltasink's own
Kafka calls read the store's private key here: JKS protects a key with Sun's "key protector"
(a SHA-1 keystream over the key password, with a SHA-1 check of the result), which needs no
cryptography library to open. The key and its chain stay in this process's memory
(``ssl.key.pem``, ``ssl.certificate.pem``): nothing unprotected is written to disk.

Java opens the key with ``ssl.key.password``, or the store's password when that is not set;
so does this module.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from pipelines.errors import ConfigError
from pipelines.kafka.truststore import jks_entries, pem, read_store

#: The OID of Sun's JKS key protector (1.3.6.1.4.1.42.2.17.1.1), DER-encoded.
_KEY_PROTECTOR = bytes.fromhex("060a2b060104012a021101010500")


@dataclass(frozen=True)
class KeyPair:
    """A client's private key (PKCS#8) and certificate chain, as PEM text. Never log it."""

    key_pem: str
    chain_pem: str


def _der(data: bytes, at: int) -> tuple[int, int, int]:
    """The tag, the content's start and its end of the DER element at ``at``."""
    tag, first = data[at], data[at + 1]
    if first < 0x80:
        return tag, at + 2, at + 2 + first
    size = int.from_bytes(data[at + 2:at + 2 + (first & 0x7F)], "big")
    start = at + 2 + (first & 0x7F)
    return tag, start, start + size


def unprotect(blob: bytes, password: str) -> bytes:
    """The PKCS#8 private key inside a JKS key entry's ``EncryptedPrivateKeyInfo``.

    Raises:
        ValueError: not a key-protector blob, or the password does not open it.
    """
    _tag, start, _end = _der(blob, 0)  # EncryptedPrivateKeyInfo ::= SEQUENCE {
    _tag, algo_start, algo_end = _der(blob, start)  # AlgorithmIdentifier,
    if _KEY_PROTECTOR not in blob[algo_start:algo_end + 2]:
        raise ValueError("the key is not protected the JKS way (another store type?)")
    tag, data_start, data_end = _der(blob, algo_end)  # encryptedData OCTET STRING }
    if tag != 0x04:
        raise ValueError("a damaged key entry")
    data = blob[data_start:data_end]
    salt, sealed, check = data[:20], data[20:-20], data[-20:]
    secret = password.encode("utf-16-be")
    stream, digest = b"", salt
    while len(stream) < len(sealed):
        digest = hashlib.sha1(secret + digest).digest()
        stream += digest
    key = bytes(a ^ b for a, b in zip(sealed, stream, strict=False))
    if hashlib.sha1(secret + key).digest() != check:
        raise ValueError("its key password (ssl.key.password, or ssl.keystore.password) "
                         "does not open the key")
    return key


def jks_key_pair(location: str, store_password: str | None,
                 key_password: str | None) -> KeyPair:
    """The first private key of the JKS store at ``location``, with its chain, as PEM.

    Raises:
        ConfigError: the store cannot be read or opened, or holds no private key (the option
            is named; no secret is shown).
    """
    where = "source.options.ssl.keystore.location"
    data = read_store(location, "keystore")
    password = key_password if key_password is not None else store_password
    try:
        for blob, chain in jks_entries(data, store_password, "ssl.keystore.password"):
            if blob is not None:
                if password is None:
                    raise ValueError("no ssl.keystore.password or ssl.key.password to open "
                                     "its key")
                return KeyPair(pem(unprotect(blob, password), "PRIVATE KEY"),
                               "".join(pem(cert) for cert in chain))
    except (ValueError, struct.error, IndexError) as exc:
        raise ConfigError(f"{where}: {location} is not a readable JKS key store "
                          f"({exc})") from None
    raise ConfigError(f"{where}: {location} holds no private key (a trust store?)")
