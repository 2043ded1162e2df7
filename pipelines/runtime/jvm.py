"""JVM artifacts: which Maven coordinates deltasink needs, and how they are fetched and cached.

Spark resolves its packages with Ivy (``spark.jars.packages``). Ivy looks in ``~/.m2`` first, so
:func:`fetch` pre-fetches everything there with ``mvn`` once; after that no run touches the network.

One workaround is deliberate: the 4.0.1 Kafka connector depends on
``spark-token-provider-kafka-0-10_2.13:4.0.1``, which the Maven Central reachable from our build
machines does not serve. We exclude it from Ivy's resolution and put the binary-compatible 4.0.0
jar on ``spark.jars`` instead (see :func:`spark_conf`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import env
from pipelines.errors import EnvironmentSetupError

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"
TOKEN_PROVIDER = "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0"
DELTA = "io.delta:delta-spark_2.13:4.0.0"
#: Spark's Avro functions (``from_avro``), for ``source.format: avro``.
AVRO = "org.apache.spark:spark-avro_2.13:4.0.1"
#: The packages Spark resolves with Ivy (``spark.jars.packages``), Delta's added by delta-spark.
SPARK_PACKAGES = (KAFKA_CONNECTOR, AVRO)
#: Hadoop's S3A connector, the version of pyspark 4.0.1's hadoop-client (3.4.1); its POM brings
#: the AWS SDK v2 bundle (``software.amazon.awssdk:bundle:2.24.6``, about 560 MB). A session
#: resolves it only when a pipeline has an S3 location (:mod:`pipelines.storage.s3`).
HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.4.1"
S3_PACKAGES = (HADOOP_AWS,)
KAFKA_BROKER = "org.apache.kafka:kafka_2.13:4.1.0"
#: slf4j 2 routed to log4j2: the logging of the JVMs run from Maven jars (the broker, the
#: tests' Kafka Connect), whose own POMs bring no logging backend.
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


def _pom(name: str, coordinates: list[str], exclude: str | None = None) -> str:
    deps = []
    for text in coordinates:
        c = Coordinate.parse(text)
        exclusion = ""
        if exclude and text == KAFKA_CONNECTOR:
            g, a, _ = (*exclude.split(":"), "")[:3]
            exclusion = (f"<exclusions><exclusion><groupId>{g}</groupId>"
                         f"<artifactId>{a}</artifactId></exclusion></exclusions>")
        deps.append(f"<dependency><groupId>{c.group}</groupId><artifactId>{c.artifact}"
                     f"</artifactId><version>{c.version}</version>{exclusion}</dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0"
            f"</modelVersion><groupId>deltasink.cache</groupId><artifactId>{name}</artifactId>"
            f"<version>1</version><dependencies>{''.join(deps)}</dependencies></project>\n")


def _resolve(name: str, coordinates: list[str], exclude: str | None = None) -> list[Path]:
    """Download ``coordinates`` (transitively) into ~/.m2 with mvn; return the classpath."""
    folder = cache_dir() / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(_pom(name, coordinates, exclude))
    out = folder / "classpath.txt"
    mvn = shutil.which("mvn")
    if not mvn:
        raise EnvironmentSetupError("Maven (`mvn`) is needed once to fetch JVM jars; install it "
                                    "(`apt-get install maven`) and run `make install`.")
    cmd = [mvn, "-q", "-B", "-f", str(folder / "pom.xml"), "dependency:build-classpath",
           f"-Dmdep.outputFile={out}", f"-Dmaven.repo.local={m2_repository()}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        raise EnvironmentSetupError(
            f"could not fetch the JVM artifacts for {name} from Maven Central, and they are not "
            f"cached in {m2_repository()}. Check network access to Maven Central (or a mirror in "
            f"~/.m2/settings.xml) and run `make install` again.\nmvn said:\n{tail}")
    return [Path(p) for p in out.read_text().strip().split(os.pathsep) if p]


def _cached(name: str, wanted: tuple[str, ...] = ()) -> list[Path] | None:
    """The classpath :func:`_resolve` wrote for ``name``, if every jar of it is still there and
    it holds the jars of ``wanted``; else None (resolve again)."""
    cached = cache_dir() / name / "classpath.txt"
    if not cached.exists():
        return None
    jars = [Path(p) for p in cached.read_text().strip().split(os.pathsep) if p]
    needed = {Coordinate.parse(c).jar_in(m2_repository()) for c in wanted}
    return jars if jars and all(j.exists() for j in jars) and needed <= set(jars) else None


def classpath(name: str, coordinates: tuple[str, ...]) -> list[Path]:
    """The classpath of ``coordinates`` and their dependencies, fetched into ~/.m2 with mvn on
    first use and cached under ``name`` afterwards, as the broker's is.

    For jars that only some callers need (the tests' Kafka Connect and Debezium): they are
    fetched where they are first used, never by :func:`fetch`, so a user's install stays lean.
    """
    return _cached(name, coordinates) or _resolve(name, list(coordinates))


def broker_classpath() -> list[Path]:
    """The embedded Kafka broker's classpath, fetched on first use and cached afterwards."""
    return _cached("kafka-broker") or _resolve("kafka-broker", [KAFKA_BROKER, *LOGGING_JARS])


def spark_classpath() -> list[Path]:
    """The Spark-side jars (Delta, Kafka connector, spark-avro, their dependencies) in ~/.m2."""
    return _cached("spark-packages", SPARK_PACKAGES) or _resolve(
        "spark-packages", [DELTA, *SPARK_PACKAGES, TOKEN_PROVIDER], exclude=TOKEN_PROVIDER)


def s3_classpath() -> list[Path]:
    """The S3A jars (hadoop-aws, the AWS SDK bundle, their dependencies) in ~/.m2."""
    return _cached("s3", S3_PACKAGES) or _resolve("s3", list(S3_PACKAGES))


def spark_artifacts_cached(packages: tuple[str, ...] = ()) -> bool:
    """Whether the Spark-side jars, and those of ``packages``, are already in ~/.m2 (so Ivy
    needs no network). The S3 packages count only with their whole classpath fetched."""
    m2 = m2_repository()
    if any(c in S3_PACKAGES for c in packages) and \
            not (cache_dir() / "s3" / "classpath.txt").exists():
        return False
    return all(Coordinate.parse(c).jar_in(m2).exists()
               for c in (*SPARK_PACKAGES, TOKEN_PROVIDER, DELTA, *packages))


def fetch() -> list[str]:
    """Fetch every JVM artifact deltasink uses into ~/.m2 (idempotent).

    Returns:
        A line per artifact group, for the user.
    """
    require_java()
    spark_jars = spark_classpath()
    s3 = s3_classpath()
    broker = broker_classpath()
    return [f"spark packages: {len(spark_jars)} jars in {m2_repository()}",
            f"s3 (S3A):       {len(s3)} jars ({HADOOP_AWS} and the AWS SDK)",
            f"kafka broker:   {len(broker)} jars ({KAFKA_BROKER})"]
