"""``jvm.classpath``: jars fetched where they are first used, once, and then read from the cache
(no JVM, no mvn run here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.errors import EnvironmentSetupError
from pipelines.runtime import jvm
from tests.support.kafka_connect import CONNECT_RUNTIME, DEBEZIUM_POSTGRES

PIPELINES = Path(jvm.__file__).resolve().parents[1]


@pytest.fixture
def no_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh JVM cache folder, and a PATH on which there is no ``mvn`` to fetch with."""
    monkeypatch.setenv("DELTASINK_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return tmp_path / "cache"


def test_a_cached_classpath_is_read_back_without_running_mvn(no_mvn: Path) -> None:
    wanted = jvm.Coordinate.parse(jvm.LOGGING_JARS[0]).jar_in(jvm.m2_repository())
    if not wanted.exists():
        pytest.skip(f"{wanted} is not in ~/.m2 here")  # a fresh machine before setup
    (no_mvn / "logging").mkdir(parents=True)
    (no_mvn / "logging" / "classpath.txt").write_text(str(wanted))
    one = jvm.JarSet("logging", "a jar", jvm.LOGGING_JARS[:1], jvm.LOGGING_JARS[:1])
    assert jvm.classpath(one) == [wanted]


def test_a_classpath_without_a_wanted_jar_is_fetched_again(no_mvn: Path) -> None:
    other = jvm.Coordinate.parse(jvm.LOGGING_JARS[0]).jar_in(jvm.m2_repository())
    if not other.exists():
        pytest.skip(f"{other} is not in ~/.m2 here")
    (no_mvn / "logging").mkdir(parents=True)
    (no_mvn / "logging" / "classpath.txt").write_text(str(other))
    with pytest.raises(EnvironmentSetupError, match="Maven"):  # it went to fetch, with no mvn
        jvm.classpath(jvm.JarSet("logging", "a jar", jvm.LOGGING_JARS[1:2],
                                 jvm.LOGGING_JARS[1:2]))


def test_the_test_only_jars_are_named_nowhere_in_the_package() -> None:
    """Kafka Connect and Debezium are fetched by the tests' fixture, never by ``deltasink
    setup`` or a run: the install stays lean (issue 61)."""
    for path in PIPELINES.rglob("*.py"):
        text = path.read_text()
        for coordinate in (CONNECT_RUNTIME, DEBEZIUM_POSTGRES):
            artifact = coordinate.split(":")[1]
            assert artifact not in text, f"{os.path.relpath(path)} names {artifact}"
