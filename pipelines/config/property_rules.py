"""What a table property may not do to the sink's guarantees, given the pipeline's settings.

Checked when the config is loaded (each refusal one line, with what to set instead), and, for a
table with properties in the config, again against the existing table's own properties before
the run writes to it (:mod:`pipelines.sink.properties`), so one set behind deltasink's back is
caught too (a table without any in the config costs no look at its properties):

* ``delta.appendOnly: true`` makes Delta refuse every UPDATE: ``mode: upsert`` replaces a key's
  row with its newer version (an UPDATE), and ``quarantine redrive`` marks the quarantined
  records it landed (an UPDATE of the quarantine);
* ``delta.logRetentionDuration`` shorter than :data:`RECOVERY_HOURS`: the sink reads its own
  commits in the target's log (``pipelines/ledger/``) to prove that a batch Delta skipped was a
  true replay, to find the offsets to resume from when the checkpoint is lost, and to see which
  commits a RESTORE undid; ``deltasink rewind`` time-travels to an older version. Delta deletes
  commits older than the retention at its next checkpoint: a pipeline paused for longer, while
  maintenance commits go on, would find no offsets of its own and start over from
  ``source.starting_offsets`` (with ``latest``, skipping what arrived meanwhile). The dedup
  window does not enter: the MERGE finds copies in the data files, never in the log;
* ``delta.deletedFileRetentionDuration`` shorter than :data:`RECOVERY_HOURS`: any VACUUM
  without ``RETAIN`` would then delete files that a retried batch's snapshot, validation's
  pinned snapshot and ``deltasink rewind``'s RESTORE still read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from pipelines.config.units import parse_interval

#: How far back recovery reaches: retried batches, pinned validation snapshots, RESTORE to the
#: version before a bad run while Kafka can replay after it (Kafka's default retention, 7 days).
RECOVERY_HOURS = 168
APPEND_ONLY = "delta.appendOnly"
LOG_RETENTION = "delta.logRetentionDuration"
FILE_RETENTION = "delta.deletedFileRetentionDuration"


def _spelled(span: timedelta) -> str:
    hours = span.total_seconds() / 3600
    return f"{int(hours // 24)} days" if hours % 24 == 0 else f"{hours:g} hours"


def problems(properties: Mapping[str, str], where: str, *, upsert: bool,
             quarantine: bool) -> list[str]:
    """One line per property that breaks a guarantee of this table, with what to do.

    Args:
        properties: Delta's keys and values (``table_properties.normalize``); other keys, or
            values that do not parse (a table's own, set outside deltasink), are not looked at.
        where: the config key or the table, for the message.
        upsert: the target of ``mode: upsert``.
        quarantine: the quarantine table.
    """
    out: list[str] = []
    if properties.get(APPEND_ONLY, "").lower() == "true" and (upsert or quarantine):
        why = ("quarantine redrive marks the records it landed (an UPDATE)" if quarantine else
               "mode: upsert replaces a key's row with its newer version (an UPDATE)")
        out.append(f"{where}: {APPEND_ONLY}: true makes Delta refuse every UPDATE, and {why}; "
                   f"drop it" + ("" if quarantine else " or use mode: insert_only"))
    for key, floor, what in (
            (LOG_RETENTION, timedelta(hours=RECOVERY_HOURS), "the sink reads its commits in "
             "the log to prove replays, find its offsets and follow RESTOREs"),
            (FILE_RETENTION, timedelta(hours=RECOVERY_HOURS), "a VACUUM would delete files "
             "that retried batches, validation snapshots and rewind's RESTORE read")):
        try:
            span = parse_interval(properties[key]) if key in properties else None
        except ValueError:
            continue
        if span is not None and span < floor:
            out.append(f"{where}: {key} '{properties[key]}' is shorter than "
                       f"{_spelled(floor)}: {what}; set at least '{_spelled(floor)}'")
    return out
