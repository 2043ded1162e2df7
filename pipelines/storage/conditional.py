"""Small JSON objects on S3 changed only by S3's own conditional writes, with boto3.

S3 has taken conditions on ``PutObject`` since 2024: ``If-None-Match: *`` creates an object only
if none is there, ``If-Match: <etag>`` replaces it only if it is still the version read. S3
checks the condition and writes the object as one step, so of two writes made from the same
version exactly one succeeds (the other gets ``412 Precondition Failed``, or ``409`` when they
arrive together). That is the compare-and-set Delta's default S3 log store does not have.

An ETag is the MD5 of the body, so two writes of the same bytes have one ETag: every body
written here carries a fresh ``write`` nonce, so no write can match a version it did not read.

boto3 finds the bucket with the settings an S3A user writes in ``spark.conf``
(:meth:`S3Place.of`), and its credentials in AWS's default chain (environment, profile,
instance role). Nothing here prints a setting's value or a credential.
"""

from __future__ import annotations

import email.utils
import functools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pipelines.errors import CheckpointError, EnvironmentSetupError

#: The S3A settings boto3 takes over, without their ``spark.hadoop.fs.s3a.`` prefix.
_ENDPOINT, _REGION, _PATH_STYLE, _SSL = ("endpoint", "endpoint.region", "path.style.access",
                                         "connection.ssl.enabled")
#: The answers of a condition that did not hold: precondition failed, a conditional write
#: racing another (S3's 409), an ``If-Match`` on an object that is gone.
_LOST = ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409", "404")


@dataclass(frozen=True)
class S3Place:
    """Where boto3 reaches a bucket: S3A's endpoint, region and path style. Plain values (no
    client, no credential), so a lease that holds one stays picklable.

    Attributes:
        endpoint: the endpoint URL, or None for AWS's default (or ``AWS_ENDPOINT_URL_S3``).
        region: the region, or None for AWS's default chain.
        path_style: address the bucket in the path (``fs.s3a.path.style.access``).
    """

    endpoint: str | None = None
    region: str | None = None
    path_style: bool = False

    @classmethod
    def of(cls, conf: Mapping[str, str], bucket: str) -> S3Place:
        """The place of ``bucket`` as S3A would reach it from these Spark settings: the
        per-bucket ``spark.hadoop.fs.s3a.bucket.<bucket>.<key>`` before
        ``spark.hadoop.fs.s3a.<key>``, for ``endpoint``, ``endpoint.region``,
        ``path.style.access`` and ``connection.ssl.enabled``.
        """
        def value(key: str) -> str | None:
            for name in (f"spark.hadoop.fs.s3a.bucket.{bucket}.{key}",
                         f"spark.hadoop.fs.s3a.{key}"):
                if conf.get(name):
                    return conf[name].strip()
            return None

        endpoint = value(_ENDPOINT)
        if endpoint and "://" not in endpoint:  # S3A takes a host; its scheme follows SSL
            secure = (value(_SSL) or "true").lower() != "false"
            endpoint = ("https://" if secure else "http://") + endpoint
        return cls(endpoint, value(_REGION), (value(_PATH_STYLE) or "").lower() == "true")


@dataclass(frozen=True)
class Version:
    """An object as read: its JSON body, its ETag, and its age by S3's clock.

    Attributes:
        body: the parsed JSON body.
        etag: the ETag to make a conditional write against.
        age_s: the response's ``Date`` minus the object's ``LastModified``, in seconds (both
            S3's clock, one-second resolution).
    """

    body: Mapping[str, Any]
    etag: str
    age_s: float


def split(url: str) -> tuple[str, str]:
    """``s3a://bucket/key`` as ``(bucket, key)``."""
    parts = urlsplit(url)
    return parts.netloc, parts.path.lstrip("/")


@functools.lru_cache(maxsize=8)
def _client(place: S3Place) -> Any:
    """One boto3 client per place and process (a client is thread-safe, its creation slow). Each
    process builds its own: a lease pickled into a ``foreachBatch`` worker carries no client."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise EnvironmentSetupError(
            "a checkpoint on S3 needs boto3 for its lease: pip install deltasink[s3]") from None
    config = Config(s3={"addressing_style": "path" if place.path_style else "auto"},
                    retries={"max_attempts": 3, "mode": "standard"})
    return boto3.session.Session().client("s3", endpoint_url=place.endpoint,
                                          region_name=place.region, config=config)


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {}) if isinstance(response, dict) else {}
    return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def _failed(url: str, doing: str, exc: BaseException) -> CheckpointError:
    """One line for a store that failed: S3's error code and message, or botocore's (neither
    carries a credential)."""
    response = getattr(exc, "response", None) or {}
    message = response.get("Error", {}).get("Message") if isinstance(response, dict) else None
    return CheckpointError(f"S3 lease {url}: {doing} failed: {_code(exc) or type(exc).__name__}"
                           f" ({message or str(exc).splitlines()[0]})")


def _call(url: str, doing: str, action: Any, **kwargs: Any) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = split(url)
    try:
        return action(Bucket=bucket, Key=key, **kwargs)
    except (BotoCoreError, ClientError) as exc:
        if doing != "read" and _code(exc) in _LOST:
            return None
        if doing == "read" and _code(exc) in ("NoSuchKey", "404"):
            return None
        raise _failed(url, doing, exc) from None


def get(place: S3Place, url: str) -> Version | None:
    """The object at ``url``, or None when there is none."""
    answer = _call(url, "read", _client(place).get_object)
    if answer is None:
        return None
    date = answer["ResponseMetadata"].get("HTTPHeaders", {}).get("date")
    now = email.utils.parsedate_to_datetime(date) if date else answer["LastModified"]
    body = json.loads(answer["Body"].read() or b"{}")
    return Version(body, answer["ETag"], (now - answer["LastModified"]).total_seconds())


def _body(fields: Mapping[str, Any]) -> bytes:
    return json.dumps({**fields, "write": uuid.uuid4().hex}, sort_keys=True).encode()


def create(place: S3Place, url: str, fields: Mapping[str, Any]) -> bool:
    """Write ``fields`` (plus a fresh nonce) at ``url`` if no object is there: whether it was
    written (``If-None-Match: *``)."""
    client = _client(place)
    return _call(url, "create", client.put_object, Body=_body(fields), IfNoneMatch="*",
                 ContentType="application/json") is not None


def replace(place: S3Place, url: str, fields: Mapping[str, Any], etag: str) -> bool:
    """Write ``fields`` (plus a fresh nonce) at ``url`` if the object is still version ``etag``:
    whether it was written (``If-Match``)."""
    client = _client(place)
    return _call(url, "write", client.put_object, Body=_body(fields), IfMatch=etag,
                 ContentType="application/json") is not None
