"""``deltasink setup`` fetches what every user needs, and S3A's jars only when asked; a command
for a pipeline on S3 without them stops in one line naming ``deltasink setup --s3``.

What each flag fetches is checked on the coordinates :func:`pipelines.runtime.jvm.plan` gives
``mvn`` (no network); the refusals are real ``deltasink`` processes pointed at an empty Maven
repository (``DELTASINK_M2``) and an empty deltasink cache (``DELTASINK_JVM_CACHE``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipelines.cli.parser import build_parser
from pipelines.cli.setup import wants_s3
from pipelines.config import env
from pipelines.errors import ConfigError
from pipelines.runtime import jvm
from tests.support import runner
from tests.support.configs import write_config

EVERY_USER = {jvm.DELTA, jvm.KAFKA_CONNECTOR, jvm.AVRO, jvm.TOKEN_PROVIDER, jvm.KAFKA_BROKER}


def fetched_by(*argv: str) -> set[str]:
    """The coordinates ``deltasink setup <argv>`` hands mvn."""
    s3, _ = wants_s3(build_parser().parse_args(["setup", *argv]))
    return {c for jars in jvm.plan(s3=s3) for c in jars.coordinates}


def on_s3(folder: Path, name: str = "on_s3", **spark: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder, "127.0.0.1:9", "t", name=name, spark={"conf": {}, **spark},
                        target={"path": f"s3a://bucket/{name}",
                                "quarantine_path": f"s3a://bucket/{name}_q"})


def local(folder: Path, name: str = "local") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder, "127.0.0.1:9", "t", name=name)


def test_plain_setup_fetches_what_every_user_needs_and_no_s3_jar() -> None:
    plain = fetched_by()
    assert EVERY_USER <= plain
    assert jvm.HADOOP_AWS not in plain


def test_setup_s3_fetches_the_s3a_jars_too() -> None:
    assert fetched_by("--s3") == fetched_by() | {jvm.HADOOP_AWS}


def test_setup_config_fetches_s3a_only_when_a_config_is_on_s3(tmp_path: Path) -> None:
    plain, s3 = local(tmp_path / "a"), on_s3(tmp_path / "b")
    remote = on_s3(tmp_path / "c", name="remote", remote="sc://127.0.0.1:15002")
    assert jvm.HADOOP_AWS not in fetched_by("--config", str(plain))
    assert jvm.HADOOP_AWS in fetched_by("--config", str(plain), "-c", str(s3))
    assert jvm.HADOOP_AWS in fetched_by("--config", str(tmp_path / "b"))  # a folder of configs
    # A Spark Connect client reaches S3 through its server's jars, not its own.
    assert jvm.HADOOP_AWS not in fetched_by("--config", str(remote))
    s3_wanted, why = wants_s3(build_parser().parse_args(["setup", "-c", str(tmp_path / "b")]))
    assert s3_wanted and why == "s3: needed by on_s3 (a location on S3)"


def test_setup_config_of_a_folder_without_configs_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no pipeline config"):
        fetched_by("--config", str(tmp_path))


def empty_jars(tmp_path: Path) -> dict[str, str]:
    """An environment whose Maven repository and deltasink cache are empty folders."""
    return {**os.environ, env.M2: str(tmp_path / "m2"), env.JVM_CACHE: str(tmp_path / "cache")}


def refused(done: subprocess.CompletedProcess[str], children: set[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "java" not in children  # stopped before Spark started
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["run"], ["status"], ["rewind", "--to-version", "0", "--dry-run"],
    ["replay", "--from-timestamp", "2024-01-01T00:00:00Z"], ["quarantine", "redrive"]],
    ids=lambda command: command[0])
def test_a_command_for_a_pipeline_on_s3_without_the_s3_jars_stops_in_one_line(
        tmp_path: Path, command: list[str]) -> None:
    config = on_s3(tmp_path)
    children: set[str] = set()
    done = runner.deltasink(command[0], "--config", str(config), *command[1:],
                            env=empty_jars(tmp_path), timeout=120, children=children)
    line = refused(done, children)
    assert line == ("error: pipeline on_s3: s3a://bucket/on_s3 is on S3, and the S3A jars "
                    "(hadoop-aws and the AWS SDK) that s3:// and s3a:// locations need are not "
                    f"fetched into {tmp_path / 'm2'}: run `deltasink setup --s3` once")
    assert not (tmp_path / "m2").exists()  # nothing was downloaded on the way


@pytest.mark.slow
def test_a_group_with_a_pipeline_on_s3_without_the_s3_jars_stops_in_one_line(
        tmp_path: Path) -> None:
    local(tmp_path / "d")
    on_s3(tmp_path / "d")
    children: set[str] = set()
    done = runner.deltasink("run", "--all", str(tmp_path / "d"), env=empty_jars(tmp_path),
                            timeout=120, children=children)
    assert "`deltasink setup --s3`" in refused(done, children)


@pytest.mark.slow
def test_on_databricks_a_pipeline_on_s3_is_never_refused(tmp_path: Path) -> None:
    """The runtime brings its own S3 file system: the command goes on to its session (here a
    plain local one, which has no S3A, so ``status`` then fails reading the target)."""
    children: set[str] = set()
    done = runner.deltasink("status", "--config", str(on_s3(tmp_path)), timeout=300,
                            env={**empty_jars(tmp_path), "DATABRICKS_RUNTIME_VERSION": "15.4"},
                            children=children)
    assert "setup --s3" not in done.stderr
    assert "java" in children and done.returncode == 1, done.stderr[-3000:]
