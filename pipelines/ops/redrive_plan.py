"""What a redrive would do: the plan, read from one version of the quarantine table.

:mod:`pipelines.ops.redrive` makes it; :mod:`pipelines.ops.redrive_commit` commits it. It sits in
a module of its own so that neither of them imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.sink.batch import QUARANTINE_KEY
from pipelines.sink.materialize import release
from pipelines.sink.parse import record_hash

#: The old reason, carried through the re-parse.
OLD_REASON = "_old_reason"


@dataclass
class RedrivePlan:
    """What a redrive would do, over one version of the quarantine table.

    Attributes:
        quarantine_version: the quarantine version the rows were read at.
        classified: the selected rows re-parsed (``_reason`` null: they now parse), with the old
            reason in ``_old_reason``; materialized, :meth:`release` frees it.
        deduped: the rows that now parse, one per dedup key (what the target MERGE receives).
        values: partition column -> the distinct values in ``deduped``.
        unique: rows in ``deduped``.
        outcomes: (old reason, new reason or None) -> rows.
    """

    quarantine_version: int
    classified: DataFrame
    deduped: DataFrame
    values: dict[str, list[object]]
    unique: int
    outcomes: dict[tuple[str, str | None], int]

    @property
    def selected(self) -> int:
        """Rows selected for the redrive."""
        return sum(self.outcomes.values())

    @property
    def fixed(self) -> int:
        """Rows that now parse."""
        return sum(n for (_old, new), n in self.outcomes.items() if new is None)

    @property
    def reason_changes(self) -> int:
        """Rows that still fail, for another reason than before."""
        return sum(n for (old, new), n in self.outcomes.items()
                   if new is not None and new != old)

    def lines(self) -> list[str]:
        """The plan, one line per reason."""
        by_old: dict[str, list[int]] = {}
        for (old, new), n in sorted(self.outcomes.items(), key=lambda kv: kv[0][0]):
            counts = by_old.setdefault(old, [0, 0, 0])
            counts[0 if new is None else (1 if new == old else 2)] += n
        out = [f"reason {old}: redrive={fix} still_failing={same + changed} "
               f"(reason changes: {changed})" for old, (fix, same, changed) in by_old.items()]
        out.append(f"total: selected={self.selected} redrive={self.fixed} "
                   f"(distinct keys {self.unique}) still_failing={self.selected - self.fixed}"
                   f" reason_changes={self.reason_changes}")
        return out

    def quarantine_updates(self, *, fixed: bool) -> DataFrame:
        """The quarantine key, hash and new reason of the rows whose quarantine row changes:
        those that now parse (when ``fixed``) and those that fail for another reason."""
        new = F.col("_reason")
        changed = (new.isNull() if fixed else F.lit(False)) \
            | (new.isNotNull() & (new != F.col(OLD_REASON)))
        return self.classified.where(changed).select(
            *QUARANTINE_KEY, "kafka_timestamp", record_hash().alias("record_hash"), "_reason")

    def release(self) -> None:
        """Free the materialized rows."""
        release(self.classified)
        release(self.deduped)
