"""One code path for classic Spark and Spark Connect: no JVM-only attribute outside the few
places that must tell the two modes apart (each says why)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: JVM-only attributes and the DeltaTable API (Delta's Connect plugin is not on every server).
JVM_ONLY = re.compile(r"\._jvm\b|\._jsc\b|\._jdf\b|\._jsparkSession\b|\.sparkContext\b|"
                      r"\.rdd\b|^\s*(from|import) (delta\.tables|py4j)\b|\bDeltaTable\.\w+\(")
#: The only modules that may name one, behind a classic-mode check.
ALLOWED = {
    "pipelines/runtime/spark.py": "the classic session's log4j level",
    "pipelines/sink/materialize.py": "unpersisting a local checkpoint's blocks in classic mode",
    "pipelines/runtime/hadoop.py": "renaming or deleting a folder in classic mode (no Spark API)",
    "pipelines/storage/driver_files.py": "a classic session's checkpoint and log reads through "
                                         "its driver's Hadoop FileSystem, with no Spark job "
                                         "(Spark Connect reads them through binaryFile)",
    "pipelines/cli/failures.py": "naming a Py4J error's module when it is printed",
    "pipelines/databricks/widgets.py": "a comment on dbutils errors",
    "pipelines/faults.py": "a test-only kill inside Delta's CREATE, through the classic "
                           "session's metastore listener (kill_at_registration)",
}


def offending_lines() -> list[str]:
    found = []
    for folder in ("pipelines", "quality", "schemas", "notebooks"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            name = file.relative_to(ROOT).as_posix()
            if name in ALLOWED:
                continue
            for number, line in enumerate(file.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if JVM_ONLY.search(code) and not code.strip().startswith(('"', "'", "``")):
                    found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_no_jvm_only_attribute_outside_the_places_that_tell_the_modes_apart() -> None:
    assert offending_lines() == []


def test_the_guard_sees_a_jvm_attribute(tmp_path: Path) -> None:
    assert JVM_ONLY.search("x = spark._jvm.java.util.ArrayList()")
    assert JVM_ONLY.search("from delta.tables import DeltaTable")
    assert JVM_ONLY.search("    return DeltaTable.forPath(spark, path)")
    assert JVM_ONLY.search("    from py4j.protocol import Py4JError")
    assert not JVM_ONLY.search("spark.sql('DESCRIBE HISTORY delta.`/t`')")
