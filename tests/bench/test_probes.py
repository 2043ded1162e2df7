"""bench.probes: what the soak reads of a running JVM."""

from __future__ import annotations

from bench.probes import top_classes


def test_a_class_histogram_gives_its_largest_classes_in_mib() -> None:
    histogram = """12345:
 num     #instances         #bytes  class name (module)
-------------------------------------------------------
   1:        123456      314572800  [B (java.base@17)
   2:          2048        2097152  java.lang.String (java.base@17)
Total        125504      316669952
"""
    assert top_classes(histogram, 8) == ["300 MiB [B", "2 MiB java.lang.String"]
    assert top_classes(histogram, 1) == ["300 MiB [B"]
