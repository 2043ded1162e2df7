"""The write mode a pipeline's ``target.mode`` (and its source) names."""

from __future__ import annotations

from pipelines.config.model import PipelineConfig
from pipelines.sink.modes.base import WriteMode
from pipelines.sink.modes.insert_only import InsertOnly
from pipelines.sink.modes.replica import Replica
from pipelines.sink.modes.scd2 import Scd2
from pipelines.sink.modes.upsert import Upsert

#: ``target.mode`` -> its strategy on an event topic.
MODES: dict[str, type[WriteMode]] = {mode.name: mode for mode in (InsertOnly, Upsert, Scd2)}
#: ``target.mode`` -> its strategy on a change stream (``source.format: debezium``).
CHANGE_MODES: dict[str, type[WriteMode]] = {mode.name: mode for mode in (Replica, Scd2)}


def mode_for(config: PipelineConfig) -> WriteMode:
    """The strategy of ``config``'s target mode."""
    modes = CHANGE_MODES if config.change_stream else MODES
    return modes[config.target.mode](config)
