"""Connect's decimals, exactly: two's-complement bytes -> ``decimal(38,0)`` -> text -> decimal.

``org.apache.kafka.connect.data.Decimal`` sends the unscaled value as big-endian two's
complement bytes (base64 in JSON), the scale in the schema;
``io.debezium.data.VariableScaleDecimal`` sends both, ``{scale, value}``. The bytes become a
``decimal(38,0)`` by a fold over them (``aggregate``: Spark has no big integer of bytes), then
the decimal's exact text with its scale, then the column's decimal type; a value that does not
fit exactly (more digits, or digits past the scale it would be rounded to) is refused, never
rounded.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from pipelines.formats.decoded import let

_WIDE = "decimal(38,0)"


def unscaled(data: Column) -> Column:
    """The signed big-endian two's-complement integer of ``data`` as ``decimal(38,0)``; null
    when it has no bytes or more than 38 digits."""
    def fold(text: Column) -> Column:
        negative = F.conv(F.substring(text, 1, 1), 16, 10).cast("int") >= F.lit(8)
        flipped = F.translate(text, "0123456789ABCDEF", "FEDCBA9876543210")

        def signed(digits: Column) -> Column:  # a negative number is -(NOT x + 1)
            magnitude = F.aggregate(
                F.sequence(F.lit(1), (F.length(digits) / 2).cast("int")), F.lit(0).cast(_WIDE),
                lambda acc, i: F.try_add(F.try_multiply(acc, F.lit(256).cast(_WIDE)),
                                         F.conv(F.substring(digits, i * 2 - 1, F.lit(2)), 16, 10)
                                         .cast(_WIDE)).cast(_WIDE))
            return F.when(negative, -F.try_add(magnitude, F.lit(1).cast(_WIDE))) \
                .otherwise(magnitude)

        return F.when(F.length(text) > 0, let(F.when(negative, flipped).otherwise(text), signed))

    return let(F.hex(data), fold)


def decimal_text(number: Column, scale: Column) -> Column:
    """The exact decimal text of unscaled ``number`` at ``scale`` (``-0.01`` for -1 at 2)."""
    def text(n: Column) -> Column:
        def place(padded: Column) -> Column:
            whole = F.substring(padded, F.lit(1), F.length(padded) - scale)
            fraction = F.substring(padded, F.length(padded) - scale + 1, scale)
            sign = F.when(n < 0, F.lit("-")).otherwise(F.lit(""))
            return F.concat(sign, whole, F.when(scale > 0, F.concat(F.lit("."), fraction))
                            .otherwise(F.lit("")))

        digits = F.abs(n).cast("string")
        return let(F.lpad(digits, F.greatest(F.length(digits), scale + F.lit(1)), "0"), place)

    return let(number, text)


def exact_decimal(text: Column, into: DecimalType) -> tuple[Column, Column]:
    """``text`` as ``into``, and whether it did not fit exactly (too many digits, or digits
    past ``into``'s scale that are not zeros). ``text`` is read three times: bind it first."""
    value = text.try_cast(into)
    fraction = F.regexp_extract(text, r"\.([0-9]+)$", 1)
    rounded = F.length(fraction) > F.lit(into.scale)
    lost = rounded & ~F.substring(fraction, into.scale + 1, 1000).rlike("^0*$")
    return value, text.isNotNull() & (value.isNull() | lost)
