"""S3: which of a pipeline's locations are on S3, and what a local Spark session needs to reach
them. Everything deltasink knows about S3 is here, so another object store is another module.

Open-source Spark reaches S3 through Hadoop's S3A connector (``hadoop-aws`` and the AWS SDK,
fetched by ``deltasink setup``, see :mod:`pipelines.runtime.jvm`). It serves ``s3a://`` by
itself; ``s3://`` (the scheme Databricks and the README use) has no file system in Hadoop 3,
so outside Databricks it is mapped to S3A, for tables (``FileSystem``) and for streaming
checkpoints (``FileContext``'s ``AbstractFileSystem``). Delta picks its S3 log store for
``s3``, ``s3a`` and ``s3n`` by itself (``DelegatingLogStore``), so it needs no setting.

A user writes only what an S3A user writes, in the config's ``spark.conf``
(``spark.hadoop.fs.s3a.endpoint``, ``...endpoint.region``, ``...path.style.access``); every
setting here is a default that ``spark.conf`` overrides. Credentials come from AWS's default
chain: S3A's own providers (its ``fs.s3a.access.key`` settings, the environment, the instance
role) and then the SDK's default chain (a profile, web identity, the container's role).
"""

from __future__ import annotations

from collections.abc import Iterable

#: The location schemes served by S3A here (``s3://`` through the mapping below).
SCHEMES = ("s3", "s3a")
_S3A = "org.apache.hadoop.fs.s3a"
#: S3A's default providers (Hadoop 3.4), then the AWS SDK's default chain, which adds the
#: profile (``AWS_PROFILE``, ``~/.aws/credentials``), web identity and container roles.
CREDENTIALS = ",".join((
    f"{_S3A}.TemporaryAWSCredentialsProvider",
    f"{_S3A}.SimpleAWSCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
))


def is_s3(location: str | None) -> bool:
    """Whether ``location`` is an S3 URI (``s3://`` or ``s3a://``)."""
    scheme, found, _ = (location or "").partition("://")
    return bool(found) and scheme.lower() in SCHEMES


def any_s3(locations: Iterable[str | None]) -> bool:
    """Whether any of ``locations`` (a pipeline's, :func:`pipelines.config.paths.locations`) is
    on S3."""
    return any(is_s3(location) for location in locations)


def spark_conf() -> dict[str, str]:
    """The settings a local session needs for S3, beneath the config's own ``spark.conf``.

    ``s3://`` is served by S3A, as a ``FileSystem`` (tables, files) and as a ``FileContext``
    (streaming checkpoints); credentials come from the chain described in the module docstring.
    """
    return {
        "spark.hadoop.fs.s3.impl": f"{_S3A}.S3AFileSystem",
        "spark.hadoop.fs.AbstractFileSystem.s3.impl": f"{_S3A}.S3A",
        "spark.hadoop.fs.s3a.aws.credentials.provider": CREDENTIALS,
    }
