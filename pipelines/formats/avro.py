"""Avro values in the Confluent wire format → JSON text of the record, in the JVM.

A value is ``0x00`` (the magic byte), a 4-byte big-endian schema id, then the record in Avro
binary, written with that id's schema (the *writer schema*). Each known writer schema gets its
own Spark ``from_avro`` (spark-avro), chosen per row by the id with ``CASE WHEN``: no Python
UDF. The decoded struct becomes JSON text, parsed to the same variant a JSON value gives
(:class:`AvroDecoder`), so every schema version lands on the pipeline's declared fields by
name (a field a version lacks is absent) with the same field checks, dedup and MERGE as JSON.

``from_avro`` runs in PERMISSIVE mode: bytes that do not decode give a struct of nulls instead
of failing the batch. To tell that apart from a record whose fields are all null, it reads with
a *reader schema* (the writer schema plus a boolean field defaulting to true): a decoded record
always carries it. Reasons, before the field checks:

``avro: not Confluent wire format`` (shorter than 5 bytes, or no magic byte) ·
``avro: unknown schema id <n>`` (not registered under the pipeline's subjects) ·
``avro: undecodable`` (the bytes do not decode with the writer schema, or it is not a record).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.errors import SchemaError
from pipelines.formats.decoded import VARIANT, Check, Decoded, once_per_row
from pipelines.kafka.registry import RegistryClient, client_for

NOT_WIRE_FORMAT = "avro: not Confluent wire format"
UNKNOWN_ID = "avro: unknown schema id "
UNDECODABLE = "avro: undecodable"
#: The field the reader schema adds; true in every record that decoded.
_DECODED = "_deltasink_decoded"
#: The column holding each record's decoded JSON text (dropped by ``classify``).
_AVRO = "_avro_json"
_REST = 2**31 - 1


@dataclass(frozen=True)
class WriterSchemas:
    """The writer schemas a batch may use: by schema id, or one file's for every id.

    Attributes:
        by_id: schema id -> Avro schema JSON text (registry mode).
        file_schema: the ``.avsc`` file's schema text (file mode: the id is not looked at).
    """

    by_id: dict[int, str] = field(default_factory=dict)
    file_schema: str | None = None


def writer_schemas(config: PipelineConfig) -> WriterSchemas | None:
    """The writer schemas for a pipeline's next batch, or None for ``source.format: json``.

    In registry mode, this lists the subjects' versions (one HTTP call per subject; schemas are
    fetched once per id and cached), so a version registered since the last batch is seen.

    Raises:
        RegistryError: the registry could not be read.
        SchemaError: the ``.avsc`` file cannot be read.
    """
    avro = config.source.avro
    if config.source.format != "avro" or avro is None:
        return None
    if avro.schema_file:
        return WriterSchemas(file_schema=_read_avsc(avro.schema_file))
    assert avro.registry_url is not None  # the config's validator sees to it
    client = client_for(avro.registry_url, avro.credentials(), avro.registry_timeout)
    return WriterSchemas(by_id=client.ids(subjects(config, client)))


def subjects(config: PipelineConfig, client: RegistryClient) -> list[str]:
    """The registry subjects of a pipeline: configured, or each topic's ``<topic>-value``."""
    avro = config.source.avro
    if avro is not None and avro.subjects:
        return list(avro.subjects)
    if config.source.topics:
        return [f"{topic}-value" for topic in config.source.topics]
    pattern = re.compile(config.source.topic_pattern or "")
    return [s for s in client.subjects()
            if s.endswith("-value") and pattern.fullmatch(s[:-len("-value")])]


@lru_cache(maxsize=16)
def _read_avsc(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
        json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SchemaError(f"source.avro.schema_file {path}: not a readable Avro schema "
                          f"({exc})") from None
    return text


def schema_id(value: Column) -> Column:
    """The schema id of a wire-format value (bytes 2-5, big-endian), as a long."""
    return F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long")


def is_wire_format(value: Column) -> Column:
    """Whether a value starts with the magic byte and a schema id."""
    return (F.length(value) >= F.lit(5)) & (F.substring(value, 1, 1) == F.lit(b"\x00"))


def _reader_schema(writer: str) -> str | None:
    """``writer`` plus the always-true decoded field, or None if it is not a record schema."""
    parsed = json.loads(writer)
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        return None
    extra = {"name": _DECODED, "type": "boolean", "default": True}
    return json.dumps({**parsed, "fields": [*parsed.get("fields", []), extra]})


def _decode(payload: Column, writer: str) -> Column:
    """JSON text of ``payload`` decoded with ``writer``: ``{}`` when it does not decode."""
    from pyspark.sql.avro.functions import from_avro

    reader = _reader_schema(writer)
    if reader is None:
        return F.lit("{}")
    return F.to_json(from_avro(payload, writer, {"mode": "PERMISSIVE", "avroSchema": reader}))


def decoded_json(value: Column, schemas: WriterSchemas) -> Column:
    """The record's JSON text; ``{}`` when undecodable; null without a schema for its id."""
    payload = F.substring(value, 6, _REST)
    if schemas.file_schema is not None:
        return F.when(is_wire_format(value), _decode(payload, schemas.file_schema))
    sid = schema_id(value)
    chosen: Column | None = None
    for key, text in sorted(schemas.by_id.items()):
        branch = _decode(payload, text)
        chosen = F.when(sid == F.lit(key), branch) if chosen is None else \
            chosen.when(sid == F.lit(key), branch)
    if chosen is None:
        return F.lit(None).cast("string")
    return F.when(is_wire_format(value), chosen)


def decoded(text: Column) -> Column:
    """Whether :func:`decoded_json`'s text is a decoded record."""
    return text.isNotNull() & (text != F.lit("{}"))


def checks(value: Column, text: Column, schemas: WriterSchemas) -> list[Check]:
    """(failure, reason) pairs for an Avro value, given its :func:`decoded_json` ``text``."""
    out: list[Check] = [(~is_wire_format(value), F.lit(NOT_WIRE_FORMAT))]
    if schemas.file_schema is None:
        sid = schema_id(value)
        known = sid.isin(sorted(schemas.by_id)) if schemas.by_id else F.lit(False)
        out.append((~known, F.concat(F.lit(UNKNOWN_ID), sid.cast("string"))))
    out.append((~decoded(text), F.lit(UNDECODABLE)))
    return out


@dataclass(frozen=True)
class AvroDecoder:
    """``source.format: avro``: each value decoded with its writer schema, then parsed as the
    JSON text of the record (decoded once per row)."""

    schemas: WriterSchemas

    def decode(self, raw: DataFrame, present: Column) -> Decoded:
        """``raw`` with the decoded value, and the ``avro: ...`` reasons."""
        value = F.col("value")
        rows = raw.withColumn(_AVRO, once_per_row(F.when(present,
                                                         decoded_json(value, self.schemas))))
        rows = rows.withColumn(VARIANT, once_per_row(F.when(
            decoded(F.col(_AVRO)), F.try_parse_json(F.col(_AVRO)))))
        return Decoded(rows, checks(value, F.col(_AVRO), self.schemas))
