"""JVM artifacts: which Maven coordinates deltasink needs, and how they are fetched and cached.

Spark resolves its packages with Ivy (``spark.jars.packages``). Ivy looks in ``~/.m2`` first, so
:func:`fetch` (``deltasink setup``) pre-fetches them there with ``mvn`` once; after that no run
touches the network. It fetches what every user needs (:data:`SPARK`, :data:`BROKER`, about a
fifth of the whole); S3A's jars (:data:`S3`, the AWS SDK bundle: the rest) only when asked
(``deltasink setup --s3``, or a config on S3), and a session that needs them without them is
refused in one line (:func:`require_fetched`) rather than downloading them by surprise.

One workaround is deliberate: the 4.0.1 Kafka connector depends on
``spark-token-provider-kafka-0-10_2.13:4.0.1``, which the Maven Central reachable from our build
machines does not serve. We exclude it from Ivy's resolution and put the binary-compatible 4.0.0
jar on ``spark.jars`` instead (see :func:`spark_conf`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import env
from pipelines.errors import EnvironmentSetupError, JarsMissingError
from pipelines.runtime import maven

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"
TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0"
DELTA = "io.delta:delta-spark_2.13:4.0.0"
#: Spark's Avro functions (``from_avro``), for ``source.format: avro``.
AVRO = "org.apache.spark:spark-avro_2.13:4.0.1"
#: The packages Spark resolves with Ivy (``spark.jars.packages``), Delta's added by delta-spark.
SPARK_PACKAGES = (KAFKA_CONNECTOR, AVRO)
#: Hadoop's S3A connector, the version of pyspark 4.0.1's hadoop-client (3.4.1); its POM brings
#: the AWS SDK v2 bundle (``software.amazon.awssdk:bundle:2.24.6``, a 558 MB jar). A session
#: resolves it only when a pipeline has an S3 location (:mod:`pipelines.storage.s3`).
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.4.1"
S3_PACKAGES = (HADOOP_AWS,)
KAFKA_BROKER = "org.apache.kafka:kafka_2.13:4.1.0"
#: A logging backend for the JVMs deltasink starts itself (the broker; the tests' Kafka Connect).
LOGGING_JARS = (
    "org.slf4j:slf4j-api:2.0.16",
    "org.apache.logging.log4j:log4j-slf4j2-impl:2.24.3",
    "org.apache.logging.log4j:log4j-core:2.24.3",
)


@dataclass(frozen=True)
class Coordinate:
    """A Maven coordinate ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    @classmethod
    def parse(cls, text: str) -> Coordinate:
        """Parse ``group:artifact:version``."""
        group, artifact, version = text.split(":")
        return cls(group, artifact, version)

    def jar_in(self, m2: Path) -> Path:
        """Where this artifact's jar lives in a Maven repository folder."""
        folder = m2.joinpath(*self.group.split("."), self.artifact, self.version)
        return folder / f"{self.artifact}-{self.version}.jar"


@dataclass(frozen=True)
class JarSet:
    """Jars fetched together: one mvn resolution, one classpath cached under ``name``.

    Attributes:
        name: its folder in :func:`cache_dir`.
        what: what it is, for the user.
        coordinates: what mvn resolves, with their dependencies.
        wanted: coordinates the cached classpath must hold (an older one lacking them is
            resolved again).
        exclude: ``group:artifact`` left out of the Kafka connector's own dependencies.
    """

    name: str
    what: str
    coordinates: tuple[str, ...]
    wanted: tuple[str, ...] = ()
    exclude: str | None = None


#: Delta, the Kafka connector and spark-avro, for every session (see the module docstring).
SPARK = JarSet("spark-packages", "Delta, the Kafka connector, spark-avro",
               (DELTA, *SPARK_PACKAGES, TOKEN_PROVIDER), SPARK_PACKAGES, TOKEN_PROVIDER)
#: The embedded Kafka broker (``deltasink broker``, ``deltasink demo``, the tests).
BROKER = JarSet("kafka-broker", KAFKA_BROKER, (KAFKA_BROKER, *LOGGING_JARS))
#: Hadoop's S3A and the AWS SDK: only for pipelines on S3 (``deltasink setup --s3``).
S3 = JarSet("s3", f"{HADOOP_AWS} and the AWS SDK", S3_PACKAGES, S3_PACKAGES)


def m2_repository() -> Path:
    """The local Maven repository that both ``mvn`` and Spark's Ivy read."""
    return Path(env.setting(env.M2) or Path.home() / ".m2" / "repository")


def cache_dir() -> Path:
    """deltasink's own cache (generated POMs, the broker classpath)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "deltasink"
    path = Path(env.setting(env.JVM_CACHE) or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def require_java() -> str:
    """Return the ``java`` executable, or fail with how to install it."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home, "bin", "java") if home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    if not java:
        raise EnvironmentSetupError(
            "Java 17+ was not found (no JAVA_HOME, no `java` on PATH). Install a JDK, e.g. "
            "`apt-get install openjdk-17-jdk-headless`, then run `make install` again."
        )
    return java


def spark_conf() -> dict[str, str]:
    """Spark settings that make the Kafka connector resolvable (see the module docstring)."""
    token = Coordinate.parse(TOKEN_PROVIDER)
    return {
        "spark.jars": str(token.jar_in(m2_repository())),
        "spark.jars.excludes": f"{token.group}:{token.artifact}",
    }


def _resolve(jars: JarSet) -> list[Path]:
    """Download ``jars`` (transitively) into ~/.m2 with mvn; return the classpath.

    Under a lock in :func:`cache_dir`: two processes fetching at once (two test workers, two
    jobs on a fresh machine) would write one POM and one classpath file; the second waits, and
    then finds the first's.
    """
    folder = cache_dir() / jars.name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        exclude = (KAFKA_CONNECTOR, jars.exclude) if jars.exclude else None
        return _cached(jars) or maven.build_classpath(folder, jars.name, jars.coordinates,
                                                      exclude, m2_repository())


def _cached(jars: JarSet) -> list[Path] | None:
    """The classpath :func:`_resolve` wrote for ``jars``, if every jar of it is still there and
    it holds the jars of ``jars.wanted`` in today's ~/.m2; else None (resolve again)."""
    cached = cache_dir() / jars.name / "classpath.txt"
    if not cached.exists():
        return None
    found = maven.read_classpath(cached)
    needed = {Coordinate.parse(c).jar_in(m2_repository()) for c in jars.wanted}
    return found if found and all(j.exists() for j in found) and needed <= set(found) else None


def classpath(jars: JarSet) -> list[Path]:
    """The classpath of ``jars``, fetched on first use and cached afterwards."""
    return _cached(jars) or _resolve(jars)


def broker_classpath() -> list[Path]:
    """The embedded Kafka broker's classpath."""
    return classpath(BROKER)


def spark_classpath() -> list[Path]:
    """The Spark-side jars (Delta, Kafka connector, spark-avro, their dependencies) in ~/.m2."""
    return classpath(SPARK)


def s3_classpath() -> list[Path]:
    """The S3A jars (hadoop-aws, the AWS SDK bundle, their dependencies) in ~/.m2."""
    return classpath(S3)


def spark_artifacts_cached(packages: tuple[str, ...] = ()) -> bool:
    """Whether the Spark-side jars, and those of ``packages``, are already in ~/.m2 (so Ivy
    needs no network). The S3 packages count only with their whole classpath fetched."""
    if set(packages) & set(S3_PACKAGES) and _cached(S3) is None:
        return False
    m2 = m2_repository()
    return all(Coordinate.parse(c).jar_in(m2).exists()
               for c in (*SPARK_PACKAGES, TOKEN_PROVIDER, DELTA, *packages))


def require_fetched(packages: tuple[str, ...]) -> None:
    """Refuse a local session that would resolve the S3 packages before they are fetched.

    Every other jar is fetched on first use, but S3A's are most of the install (the AWS SDK
    bundle): only ``deltasink setup --s3`` (or ``--config`` with a config on S3) fetches them,
    so a run never starts a download that size by surprise.

    Raises:
        JarsMissingError: an S3 package is asked for and its classpath is not fetched.
    """
    if set(packages) & set(S3_PACKAGES) and _cached(S3) is None:
        raise JarsMissingError(
            "the S3A jars (hadoop-aws and the AWS SDK) that s3:// and s3a:// locations need are "
            f"not fetched into {m2_repository()}: run `deltasink setup --s3` once")


def plan(s3: bool = False) -> tuple[JarSet, ...]:
    """What :func:`fetch` fetches: what every user needs, and with ``s3`` the S3A jars too."""
    return (SPARK, BROKER, *((S3,) if s3 else ()))


def fetch(s3: bool = False) -> list[str]:
    """Fetch the JVM artifacts of :func:`plan` into ~/.m2 (idempotent).

    Returns:
        A line per artifact group, for the user.
    """
    require_java()
    return [f"{jars.name + ':':16}{len(classpath(jars))} jars ({jars.what})" for jars in plan(s3)]
