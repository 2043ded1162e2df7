"""``target.properties`` and ``target.quarantine_properties``: Delta 4.0's keys, in Delta's
spelling, and the refusals before the run (each one problem line, exit 2, with what to do).

Run in-process through the loader and ``pipelines.cli.main`` (no Spark session is asked for).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli import main
from pipelines.config.table_properties import PROPERTIES
from pipelines.config.units import parse_interval
from tests.support.configs import make_config, write_config

UPSERT = {"mode": "upsert", "sequence_by": "kafka", "dedup_window": "0d"}


def test_keys_take_deltas_spelling_and_yaml_values_become_property_text(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, "127.0.0.1:9", "t", target={
        "properties": {"DELTA.enableChangeDataFeed": True, "delta.checkpointInterval": 20,
                       "delta.columnMapping.mode": "NAME", "team.owner": "bronze"},
        "quarantine_properties": {"delta.logRetentionDuration": "interval 30 days"}})
    assert cfg.target.properties == {"delta.enableChangeDataFeed": "true",
                                     "delta.checkpointInterval": "20",
                                     "delta.columnMapping.mode": "name", "team.owner": "bronze"}
    assert cfg.target.quarantine_properties == {"delta.logRetentionDuration": "interval 30 days"}
    assert make_config(tmp_path, "127.0.0.1:9", "t").target.properties == {}


@pytest.mark.parametrize(("target", "expected"), [
    pytest.param({"properties": {"delta.enableChangDataFeed": True}},
                 "target.properties: Value error, delta.enableChangDataFeed is not a Delta 4.0 "
                 "table property (did you mean delta.enableChangeDataFeed?)", id="typo"),
    pytest.param({"properties": {"delta.appendOnly": True}, **UPSERT},
                 "delta.appendOnly: true makes Delta refuse every UPDATE, and mode: upsert "
                 "replaces a key's row with its newer version (an UPDATE); drop it or use "
                 "mode: insert_only", id="append-only-upsert"),
    pytest.param({"quarantine_properties": {"delta.appendOnly": "true"}},
                 "target.quarantine_properties: delta.appendOnly: true makes Delta refuse every "
                 "UPDATE, and quarantine redrive marks the records it landed", id="append-only-q"),
    pytest.param({"properties": {"delta.logRetentionDuration": "interval 2 days"}},
                 "delta.logRetentionDuration 'interval 2 days' is shorter than 7 days: the sink "
                 "reads its commits in the log to prove replays, find its offsets and follow "
                 "RESTOREs; set at least '7 days'", id="log-retention"),
    pytest.param({"properties": {"delta.deletedFileRetentionDuration": "100 hours"}},
                 "delta.deletedFileRetentionDuration '100 hours' is shorter than 7 days: a "
                 "VACUUM would delete files", id="file-retention"),
    pytest.param({"properties": {"delta.setTransactionRetentionDuration": "365 days"}},
                 "delta.setTransactionRetentionDuration is refused: Delta would forget the "
                 "(txnAppId, batch id) pairs that make a replayed batch a no-op", id="txn"),
    pytest.param({"properties": {"delta.enableInCommitTimestamps": True}},
                 "delta.enableInCommitTimestamps is refused: deltasink reads commit times",
                 id="in-commit-timestamps"),
    pytest.param({"properties": {"delta.columnMapping.maxColumnId": 9}},
                 "delta.columnMapping.maxColumnId is refused: Delta's own bookkeeping",
                 id="internal"),
    pytest.param({"properties": {"delta.constraints.positive": "n > 0"}},
                 "delta.constraints.positive is refused: a CHECK constraint would fail a "
                 "record's whole batch", id="constraint"),
    pytest.param({"properties": {"delta.feature.deletionVectors": "supported"}},
                 "set the property that enables it", id="feature"),
    pytest.param({"properties": {"owner": "me"}}, "owner is reserved by Spark", id="reserved"),
    pytest.param({"properties": {"delta.enableChangeDataFeed": "yes"}},
                 "delta.enableChangeDataFeed: true or false, not 'yes'", id="bad-boolean"),
    pytest.param({"properties": {"delta.logRetentionDuration": "1 month"}},
                 "Delta does not accept months or years in an interval", id="months"),
    pytest.param({"properties": {"delta.checkpointPolicy": "v3"}},
                 "delta.checkpointPolicy: one of classic, v2, not 'v3'", id="bad-choice"),
])
def test_a_property_that_breaks_the_sink_or_delta_is_refused_in_one_line_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], target: dict[str, Any],
        expected: str) -> None:
    path = write_config(tmp_path, "127.0.0.1:9", "t", target=target)

    code = main(["run", "--config", str(path)])

    err = capsys.readouterr().err
    assert code == 2, err
    header, *problems = err.splitlines()  # the loader's form: the file, then one line a problem
    assert header.endswith("invalid config:") and len(problems) == 1, err
    assert expected in problems[0], err


def test_the_list_holds_delta_4_0_0s_47_keys_and_refuses_only_the_listed_ones() -> None:
    """``DeltaConfigs`` of delta-spark 4.0.0 registers 47 keys; each is here once, and every
    refusal says why."""
    assert len(PROPERTIES) == 47
    assert all(p.note for p in PROPERTIES.values())
    assert {p.key for p in PROPERTIES.values() if p.refused} >= {
        "delta.setTransactionRetentionDuration", "delta.enableInCommitTimestamps",
        "delta.minReaderVersion", "delta.minWriterVersion"}


@pytest.mark.parametrize(("text", "span"), [
    ("interval 30 days", timedelta(days=30)), ("168 hours", timedelta(hours=168)),
    ("1 week", timedelta(days=7)), ("INTERVAL 1 day 12 hours", timedelta(hours=36)),
    ("90 minutes", timedelta(minutes=90)),
])
def test_a_delta_interval_reads_as_its_span(text: str, span: timedelta) -> None:
    assert parse_interval(text) == span


@pytest.mark.parametrize("text", ["", "30", "thirty days", "2 fortnights", "1 year"])
def test_a_text_that_is_no_delta_interval_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval(text)
