"""The target suite's expectations in upsert mode."""

from __future__ import annotations

from pathlib import Path

from quality.suites import target_suite
from tests.support.configs import make_config
from tests.support.upsert_model import UPSERT


def _checks(suite: object) -> set[tuple[str, str]]:
    return {(type(e).__name__, str(getattr(e, "column", ""))) for e in suite.expectations}  # type: ignore[attr-defined]


def test_upsert_suite_adds_the_tombstone_flag_and_keeps_key_uniqueness(lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "orders", target=UPSERT)
    checks = _checks(target_suite(cfg))
    assert ("ExpectColumnToExist", "_deleted") in checks
    assert ("ExpectColumnValuesToNotBeNull", "_deleted") in checks
    assert ("ExpectColumnValuesToNotBeNull", "event_time") in checks
    assert ("ExpectColumnValuesToBeUnique", "event_id") in checks


def test_insert_only_suite_has_no_tombstone_checks(lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "orders")
    assert not any(column == "_deleted" for _, column in _checks(target_suite(cfg)))
