"""``quality.validate_every`` and ``quality.on_failure``: parsed by the real config loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config.cadence import Cadence
from pipelines.errors import ConfigError
from tests.support.configs import make_config


@pytest.mark.parametrize(("written", "seconds", "batches"), [
    ("15m", 900.0, None), ("1h", 3600.0, None), ("20 batches", None, 20), (20, None, 20),
    ("1 batch", None, 1), ("30s", 30.0, None),
])
def test_validate_every_takes_a_duration_or_a_batch_count(
        lake: Path, written: object, seconds: float | None, batches: int | None) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "orders", quality={"validate_every": written})
    assert (cfg.quality.validate_every.seconds, cfg.quality.validate_every.batches) == (
        seconds, batches)


def test_the_defaults_are_every_15_minutes_and_continue(lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "orders")
    assert cfg.quality.validate_every == Cadence(seconds=900.0, batches=None)
    assert cfg.quality.on_failure == "continue"


@pytest.mark.parametrize("written", ["soon", "0 batches", True, "-5m"])
def test_a_bad_cadence_is_a_config_error(lake: Path, written: object) -> None:
    with pytest.raises(ConfigError, match="validate_every"):
        make_config(lake, "127.0.0.1:9", "orders", quality={"validate_every": written})


def test_on_failure_is_continue_or_stop(lake: Path) -> None:
    with pytest.raises(ConfigError, match="on_failure"):
        make_config(lake, "127.0.0.1:9", "orders", quality={"on_failure": "pause"})


def test_a_cadence_is_due_after_its_batches_or_its_time() -> None:
    batches = Cadence(seconds=None, batches=2)
    assert not batches.due(1, 10_000) and batches.due(2, 0)
    timed = Cadence(seconds=60, batches=None)
    assert not timed.due(100, 59.9) and timed.due(1, 60)
