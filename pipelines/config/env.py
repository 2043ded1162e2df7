"""The two kinds of ``DELTASINK_*`` environment variables, in namespaces that cannot collide.

* **Config overrides** name a key path with double underscores between its parts:
  ``DELTASINK_<SECTION>__<KEY>[__<KEY>...]`` (``DELTASINK_SOURCE__BROKER_TIMEOUT``,
  ``DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG``, ``DELTASINK_SPARK__CONF__<KEY>``). The three
  top-level keys keep their old single-part names: ``DELTASINK_NAME``, ``DELTASINK_SCHEMA``,
  ``DELTASINK_CHECKPOINT``.
* **Process settings** have a single-part name and are listed in :data:`PROCESS_SETTINGS`,
  the one place that knows them; the code reads them through :func:`setting`.

Any other single-part ``DELTASINK_X`` is ignored with a warning, never an error: a variable meant
for another deltasink version, or a typo, must not stop a scheduled job.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

PREFIX = "DELTASINK_"
#: Separates the parts of a config override's key path.
SEPARATOR = "__"

SPARK_LOG = "DELTASINK_SPARK_LOG"
SPARK_LOG_LEVEL = "DELTASINK_SPARK_LOG_LEVEL"
M2 = "DELTASINK_M2"
JVM_CACHE = "DELTASINK_JVM_CACHE"
FAULT = "DELTASINK_FAULT"
CHAOS_SEED = "DELTASINK_CHAOS_SEED"
VOLUMES_ROOT = "DELTASINK_VOLUMES_ROOT"

#: Every process setting, with what it does (the docs' environment reference is rendered from it).
PROCESS_SETTINGS: dict[str, str] = {
    SPARK_LOG: "file the local driver JVM writes its output to "
               "(default ~/.cache/deltasink/spark-driver.log)",
    SPARK_LOG_LEVEL: "log4j level of the local Spark session (default ERROR)",
    M2: "local Maven repository holding the JVM jars (default ~/.m2/repository)",
    JVM_CACHE: "deltasink's cache: generated POMs, classpaths, the driver log "
               "(default ~/.cache/deltasink)",
    FAULT: "test-only fault injection (pipelines/faults.py); never set it in production",
    CHAOS_SEED: "the seed of a chaos-suite test, to replay it (tests only)",
    VOLUMES_ROOT: "outside Databricks, the local folder that stands for /Volumes in the "
                  "folders the bundle's catalog, schema and volume place a pipeline in "
                  "(pipelines/databricks/widgets.py): its checkpoint and Data Docs",
}

#: Top-level config keys, overridable by their single-part name (as before the namespaces).
TOP_LEVEL_KEYS = ("name", "schema", "checkpoint")

log = logging.getLogger("deltasink")
_warned: set[str] = set()


def setting(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of the process setting ``name``, or None when unset or empty.

    Raises:
        KeyError: ``name`` is not in :data:`PROCESS_SETTINGS` (a programming error).
    """
    if name not in PROCESS_SETTINGS:
        raise KeyError(f"{name} is not a deltasink process setting")
    return (os.environ if environ is None else environ).get(name) or None


def override_path(var: str) -> list[str] | None:
    """The lower-cased config key path ``var`` overrides, or None if it is no config override.

    ``DELTASINK_SOURCE__BROKER_TIMEOUT`` is ``["source", "broker_timeout"]``;
    ``DELTASINK_CHECKPOINT`` is ``["checkpoint"]``; ``DELTASINK_SPARK_LOG`` is None.
    """
    if not var.startswith(PREFIX):
        return None
    rest = var[len(PREFIX):]
    if SEPARATOR in rest:
        parts = [p.lower() for p in rest.split(SEPARATOR)]
        return parts if all(parts) else None
    return [rest.lower()] if rest.lower() in TOP_LEVEL_KEYS else None


def overrides(environ: Mapping[str, str]) -> dict[str, list[str]]:
    """The config overrides in ``environ``: variable name -> key path, in name order.

    A ``DELTASINK_*`` variable that is neither an override nor a process setting is ignored,
    with one warning per process naming it (never its value, which may be a secret).
    """
    found: dict[str, list[str]] = {}
    for var in sorted(environ):
        path = override_path(var)
        if path is not None:
            found[var] = path
        elif var.startswith(PREFIX) and var not in PROCESS_SETTINGS and var not in _warned:
            _warned.add(var)
            log.warning("ignoring environment variable %s: not a deltasink setting (%s) nor a "
                        "config override (DELTASINK_<SECTION>__<KEY>)", var,
                        ", ".join(PROCESS_SETTINGS))
    return found
