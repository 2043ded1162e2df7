"""The decoder a pipeline's ``source.format`` names."""

from __future__ import annotations

from pipelines.config.model import PipelineConfig
from pipelines.formats.avro import AvroDecoder, writer_schemas
from pipelines.formats.decoded import Decoder
from pipelines.formats.json import JsonDecoder


def decoder_for(config: PipelineConfig) -> Decoder:
    """JSON, or Avro with the writer schemas known now (a registry is asked each call, so a
    version registered since the last batch is seen).

    Raises:
        RegistryError: the registry could not be read.
        SchemaError: the ``.avsc`` file cannot be read.
    """
    schemas = writer_schemas(config)
    return JsonDecoder() if schemas is None else AvroDecoder(schemas)
