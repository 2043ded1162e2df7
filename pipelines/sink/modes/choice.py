"""The write mode a pipeline's ``target.mode`` names."""

from __future__ import annotations

from pipelines.config.model import PipelineConfig
from pipelines.sink.modes.base import WriteMode
from pipelines.sink.modes.insert_only import InsertOnly
from pipelines.sink.modes.upsert import Upsert

#: ``target.mode`` -> its strategy.
MODES: dict[str, type[WriteMode]] = {mode.name: mode for mode in (InsertOnly, Upsert)}


def mode_for(config: PipelineConfig) -> WriteMode:
    """The strategy of ``config``'s target mode."""
    return MODES[config.target.mode](config)
