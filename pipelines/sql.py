"""Spark SQL text for the statements deltasink sends: literals, identifiers and predicates.

Delta's MERGE, RESTORE and DESCRIBE are reached through SQL so that the same code runs in classic
mode and over Spark Connect (where ``DeltaTable`` needs a server plugin). Every value that goes
into a statement is rendered here, typed and escaped, never pasted: a string with a quote or a
backslash, a date, a timestamp and a null each come out as the literal Spark parses back to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql.types import StructType


def ident(name: str) -> str:
    """A backtick-quoted identifier (``a`b`` -> ```a``b```)."""
    return "`" + name.replace("`", "``") + "`"


def column(alias: str, name: str) -> str:
    """``alias.`name```."""
    return f"{alias}.{ident(name)}"


def literal(value: Any) -> str:
    """A Spark SQL literal for ``value`` (None, bool, int, float, Decimal, str, date, datetime).

    Raises:
        TypeError: a value of another type (never rendered by guessing).
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}L" if not -(2**31) <= value < 2**31 else str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, Decimal):
        return f"{value}BD"
    if isinstance(value, datetime):
        moment = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return f"TIMESTAMP'{moment.isoformat(sep=' ')}{'+00:00' if value.tzinfo else ''}'"
    if isinstance(value, date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def all_of(terms: Iterable[str | None]) -> str | None:
    """The conjunction of the terms that are not None or empty (None when there are none)."""
    kept = [f"({t})" for t in terms if t]
    return " AND ".join(kept) if kept else None


def any_of(terms: Iterable[str]) -> str:
    """The disjunction of ``terms`` (``false`` when there are none)."""
    kept = [f"({t})" for t in terms]
    return " OR ".join(kept) if kept else "false"


def between(alias: str, name: str, low: Any, high: Any) -> str:
    """``low <= alias.name <= high``: lets Delta skip files by their min/max statistics."""
    col = column(alias, name)
    return f"{col} >= {literal(low)} AND {col} <= {literal(high)}"


def equal_on(keys: Sequence[str], *, null_safe: bool = False) -> str:
    """``t.k = s.k`` (or ``<=>``) for every key."""
    op = "<=>" if null_safe else "="
    return " AND ".join(f"{column('t', k)} {op} {column('s', k)}" for k in keys)


def isin(alias: str, values: Mapping[str, Iterable[Any]]) -> str | None:
    """``alias.col IN (v1, v2, ...)`` for each column (``false`` for an empty list)."""
    terms = []
    for name, vals in values.items():
        distinct = sorted(set(vals))
        terms.append(f"{column(alias, name)} IN ({', '.join(map(literal, distinct))})"
                     if distinct else "false")
    return all_of(terms)


def values(rows: Sequence[Mapping[str, Any]], schema: StructType) -> str:
    """A query whose result is ``rows``, typed by ``schema``: ``SELECT CAST(..) .. FROM VALUES``.

    The rows become literals in the statement, so Spark builds them in the JVM. In classic mode
    ``spark.createDataFrame`` of a Python list would start a Python worker to serialize them (the
    first one in a process took 1.3-2.3 s on the 2-core dev VM); over Spark Connect both are
    local relations. Meant for bookkeeping rows: tens to a few thousands.

    Args:
        rows: dicts keyed by the schema's field names; a missing key is NULL, other keys are
            ignored (as ``createDataFrame`` does with dicts).
        schema: the columns, in order, with their types.

    Returns:
        The query text; with no rows, a query with the schema's columns and no rows.
    """
    fields = schema.fields
    names = [f"c{i}" for i in range(len(fields))]
    casts = ", ".join(f"CAST({name} AS {field.dataType.simpleString()}) AS {ident(field.name)}"
                      for name, field in zip(names, fields, strict=True))
    tuples = [", ".join(literal(row.get(field.name)) for field in fields) for row in rows]
    body = ", ".join(f"({t})" for t in tuples) or "(" + ", ".join("NULL" for _ in fields) + ")"
    return (f"SELECT {casts} FROM VALUES {body} AS v({', '.join(names)})"
            + ("" if rows else " WHERE false"))
