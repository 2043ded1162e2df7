"""JSON values: UTF-8 text of one JSON object, parsed to a variant in the JVM.

Reasons, in order: ``invalid_utf8`` · ``invalid_json`` · ``not_an_object``. A UTF-8 byte order
mark before the JSON is skipped (RFC 8259 lets a parser ignore it; Windows tools write it); the
quarantine keeps the bytes as sent. Duplicate keys in one object, and NaN or Infinity, are
``invalid_json`` (see :mod:`pipelines.sink.parse`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.formats.decoded import VARIANT, Decoded, once_per_row

#: The byte order mark, as text: skipped before a JSON value.
BOM = "\ufeff"


class JsonDecoder:
    """``source.format: json``: each value is parsed with ``try_parse_json``."""

    def decode(self, raw: DataFrame, present: Column) -> Decoded:
        """``raw`` with the parsed value, and the JSON reasons."""
        value = F.col("value")
        utf8 = F.is_valid_utf8(value)
        text = F.ltrim(value.cast("string"), F.lit(BOM))  # a leading byte order mark
        rows = raw.withColumn(VARIANT, once_per_row(F.when(present & utf8,
                                                           F.try_parse_json(text))))
        return Decoded(rows, [
            (~utf8, "invalid_utf8"),
            (F.col(VARIANT).isNull(), "invalid_json"),
            (~F.startswith(F.ltrim(text), F.lit("{")), "not_an_object"),
        ])
