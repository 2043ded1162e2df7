"""An existing table's Delta properties brought to ``target.properties`` (or the quarantine's).

A table deltasink creates gets its properties in the ``CREATE TABLE ... TBLPROPERTIES``
(:meth:`pipelines.storage.tables.TableRef.create_if_missing`). An existing one is compared with
the config before the run writes to it (a table with no properties in the config is not
looked at): a property that differs (or is missing) is set with ``ALTER TABLE ... SET
TBLPROPERTIES``, one commit for all of them; one that matches costs nothing, and a property
removed from the config is left on the table as it is. Two checks come first, each a one-line
refusal that changes nothing:

* a change Delta cannot make in place (``delta.columnMapping.mode`` other than ``none`` ->
  ``name``) is refused, with what to do;
* the table's own properties, with the config's applied, must keep the sink's guarantees
  (:mod:`pipelines.config.property_rules`): ``delta.appendOnly`` set on an upsert target behind
  deltasink's back is caught here, before a batch fails on it.

Why the ALTER is safe outside the batch's txn-guarded MERGE: it is a metadata-only commit (no
data file is added or removed, no row changes), it writes no ``txn`` action, so the
exactly-once bookkeeping of (txnAppId, batch id) is untouched, and it is idempotent: a rerun, a
racing start, or a start after a crash right after it, finds the properties set and commits
nothing. A writer committing meanwhile meets a metadata change, which its MERGE retries as a
conflict (``target.commit_retries``). What a property turns on applies from the next commit: the
change data feed, say, records every batch committed after it, none before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pipelines.config import property_rules
from pipelines.config.table_properties import COLUMN_MAPPING, PROPERTIES
from pipelines.config.units import parse_interval
from pipelines.errors import ConfigError
from pipelines.sql import literal
from pipelines.storage.tables import TableRef


def table_properties(spark: SparkSession, ref: TableRef) -> dict[str, str]:
    """The table's properties (``DESCRIBE DETAIL``: protocol and features not included)."""
    detail = ref.detail(spark)
    return {str(k): str(v) for k, v in dict(detail["properties"] or {}).items()}


def same_value(key: str, have: str | None, want: str) -> bool:
    """Whether a table's value ``have`` already is ``want`` (intervals compared as spans)."""
    if have is None:
        return False
    prop = PROPERTIES.get(key.lower())
    if prop is not None and prop.values == "interval":
        try:
            return parse_interval(have) == parse_interval(want)
        except ValueError:
            return False
    return have == want or (prop is not None and have.lower() == want.lower())


def changes(have: Mapping[str, str], want: Mapping[str, str], where: str) -> dict[str, str]:
    """The properties of ``want`` the table lacks or holds otherwise, or ConfigError.

    Raises:
        ConfigError: a change Delta cannot make on an existing table.
    """
    out = {k: v for k, v in want.items() if not same_value(k, have.get(k), v)}
    mode = out.get(COLUMN_MAPPING)
    if mode is not None and not (have.get(COLUMN_MAPPING, "none") == "none" and mode == "name"):
        raise ConfigError(
            f"{where}: {COLUMN_MAPPING} is {have.get(COLUMN_MAPPING, 'none')} on the table, and "
            f"Delta changes it in place only from none to name, not to {mode}: keep "
            f"{have.get(COLUMN_MAPPING, 'none')}, or write to a new target")
    return out


@dataclass(frozen=True)
class PropertyPlan:
    """What an existing table's properties need: the table, its values now, those to set."""

    ref: TableRef
    want: Mapping[str, str]
    have: Mapping[str, str]
    todo: Mapping[str, str]
    where: str


def plan_properties(spark: SparkSession, ref: TableRef, want: Mapping[str, str], where: str,
                    *, upsert: bool, quarantine: bool) -> PropertyPlan | None:
    """Check an existing table's properties against ``want``; None when nothing is to be set.

    Args:
        spark: the session.
        ref: the table (None when it does not exist yet, or ``want`` is empty).
        want: the config's properties (Delta's spelling: ``table_properties.normalize``).
        where: the config key, for messages (``target.properties``).
        upsert: the target of ``mode: upsert``.
        quarantine: the quarantine table.

    Raises:
        ConfigError: a change Delta cannot make in place, or a table property (its own, or the
            config's) that breaks a guarantee; nothing is changed.
    """
    if not want or not ref.exists(spark):
        return None
    have = table_properties(spark, ref)
    found = property_rules.problems({**have, **want}, f"table {ref.describe()}",
                                    upsert=upsert, quarantine=quarantine)
    if found:
        raise ConfigError(found[0])
    todo = changes(have, want, where)
    return PropertyPlan(ref, want, have, todo, where) if todo else None


def set_properties(spark: SparkSession, plan: PropertyPlan) -> str:
    """``ALTER TABLE ... SET TBLPROPERTIES`` of a plan's properties, in one commit.

    Returns:
        One line for the run naming what was set, and what it was.

    Raises:
        ConfigError: Delta refused, and the properties are not set (by a racing start) either.
    """
    ref = plan.ref
    pairs = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in plan.todo.items())
    try:
        spark.sql(f"ALTER TABLE {ref.sql} SET TBLPROPERTIES ({pairs})").collect()
    except Exception as exc:  # a racing start set them first: fine if they are all set now
        if changes(table_properties(spark, ref), plan.want, plan.where):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"{plan.where}: Delta refused to set {', '.join(plan.todo)} on "
                              f"{ref.describe()}: {first}") from None
    return (f"table {ref.describe()}: set " + ", ".join(
        f"{k}={v} (was {plan.have.get(k, 'unset')})" for k, v in plan.todo.items()))
