"""A killed creation of a catalog table, ridden out or refused, on the session's own catalog.

The leftover is built exactly as Delta leaves it: a managed ``CREATE TABLE`` of another name
commits the same first log entry (Delta's log does not hold the table's name), and its folder is
copied to the default location of the name under test, which no name registers. The pipeline
run killed inside Delta's CREATE, on a Hive metastore, is in test_catalog_hive.py.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import ConfigError
from pipelines.sink.tables import QUARANTINE_SCHEMA, create_or_check
from pipelines.storage.tables import TableRef
from quality.results import METRICS_PARTITION, METRICS_SCHEMA, prepare_table

pytestmark = pytest.mark.slow


def default_location(spark: SparkSession, table: str) -> Path:
    """Where the session's catalog puts a managed table ``default.<table>``."""
    rows = spark.sql("DESCRIBE SCHEMA EXTENDED default").collect()
    folder = next(str(r[1]) for r in rows if r[0] == "Location")
    return Path(folder.removeprefix("file:")) / table


def leftover(spark: SparkSession, create: str) -> tuple[str, Path]:
    """A name no catalog registers, whose default location holds a killed creation's log."""
    made, name = f"default.made_{uuid.uuid4().hex[:8]}", f"default.cat_{uuid.uuid4().hex[:8]}"
    spark.sql(create.format(name=made))
    where = default_location(spark, name.split(".")[1])
    shutil.copytree(default_location(spark, made.split(".")[1]), where)
    return name, where


def test_a_killed_creation_of_a_bookkeeping_table_is_registered_where_it_lies(
        spark: SparkSession) -> None:
    made, name = f"default.made_{uuid.uuid4().hex[:8]}", f"default.cat_{uuid.uuid4().hex[:8]}"
    prepare_table(spark, TableRef(name=made), METRICS_SCHEMA, METRICS_PARTITION)
    where = default_location(spark, name.split(".")[1])
    shutil.copytree(default_location(spark, made.split(".")[1]), where)
    with pytest.raises(Exception, match="DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"):
        spark.sql(f"CREATE TABLE {name} (a INT) USING delta")  # what every later run met
    prepare_table(spark, TableRef(name=name), METRICS_SCHEMA, METRICS_PARTITION)
    detail = spark.sql(f"DESCRIBE DETAIL {name}").first()
    assert detail is not None and detail["location"].endswith(str(where))
    assert spark.table(name).schema == spark.table(made).schema
    history = spark.sql(f"DESCRIBE HISTORY {name}").select("operation").collect()
    assert [r[0] for r in history] == ["CREATE TABLE"]  # the leftover's commit, nothing more


def test_the_quarantine_is_created_over_an_empty_log_a_kill_left_before_the_commit(
        spark: SparkSession) -> None:
    name = f"default.cat_{uuid.uuid4().hex[:8]}"
    where = default_location(spark, name.split(".")[1])
    (where / "_delta_log" / "_staged_commits").mkdir(parents=True)
    TableRef(name=name).create_if_missing(spark, QUARANTINE_SCHEMA)
    assert spark.table(name).schema.fieldNames() == QUARANTINE_SCHEMA.fieldNames()
    assert spark.table(name).count() == 0


@pytest.mark.parametrize("kind", ["delta-with-data", "not-delta"])
def test_a_location_with_someone_elses_files_is_refused_in_one_line(
        spark: SparkSession, kind: str) -> None:
    if kind == "delta-with-data":
        name, where = leftover(spark, "CREATE TABLE {name} (a BIGINT NOT NULL) USING delta")
        spark.sql(f"INSERT INTO delta.`{where}` VALUES (1)")
        said = "already holds a Delta table (2 commits, 1 files)"
    else:
        name = f"default.cat_{uuid.uuid4().hex[:8]}"
        where = default_location(spark, name.split(".")[1])
        where.mkdir(parents=True)
        (where / "part-0.csv").write_text("a\n1\n")
        said = "holds files that are not a Delta table"
    with pytest.raises(ConfigError) as err:
        TableRef(name=name).create_if_missing(
            spark, spark.createDataFrame([(1,)], "a BIGINT NOT NULL").schema)
    assert said in str(err.value) and "\n" not in str(err.value)
    assert not spark.catalog.tableExists(name)


@pytest.mark.parametrize("leftover_kind", ["first-commit", "empty-log"])
def test_a_killed_creation_of_a_table_with_properties_ends_with_them(
        spark: SparkSession, leftover_kind: str) -> None:
    """The leftover of a CREATE with properties is registered as it lies (its first commit
    holds them: no commit of their own); a table created over an empty log gets them right
    after, in a commit of their own."""
    properties = {"delta.enableChangeDataFeed": "true", "team": "bronze"}
    if leftover_kind == "first-commit":
        made, name = f"default.made_{uuid.uuid4().hex[:8]}", f"default.cat_{uuid.uuid4().hex[:8]}"
        TableRef(name=made).create_if_missing(spark, QUARANTINE_SCHEMA, (), properties)
        shutil.copytree(default_location(spark, made.split(".")[1]),
                        default_location(spark, name.split(".")[1]))
    else:
        name = f"default.cat_{uuid.uuid4().hex[:8]}"
        where = default_location(spark, name.split(".")[1])
        (where / "_delta_log" / "_staged_commits").mkdir(parents=True)

    create_or_check(spark, TableRef(name=name), QUARANTINE_SCHEMA, (), properties)

    have = spark.sql(f"DESCRIBE DETAIL {name}").first()["properties"]  # type: ignore[index]
    assert {k: have.get(k) for k in properties} == properties
    history = [r[0] for r in spark.sql(f"DESCRIBE HISTORY {name}").select("operation").collect()]
    assert history == (["CREATE TABLE"] if leftover_kind == "first-commit" else
                       ["SET TBLPROPERTIES", "CREATE TABLE AS SELECT"])
