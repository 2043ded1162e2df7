"""Before a run creates anything: can every table, folder and checkpoint it will touch be made?

A run touches the target and quarantine tables, the checkpoint, and (with quality enabled) the
quality-results and run-metrics tables and the Data Docs folder. Each is checked here, so a bad
location fails the run before the first table exists, not halfway through (the target created,
the quarantine refused; or the data committed and the metrics write failing):

* a local path must be creatable: its nearest existing ancestor a writable folder;
* a local table path that exists must be a Delta table, or an empty folder;
* no two of them may share a location;
* a catalog table's catalog must be known to the session and its schema (``catalog.schema`` of
  ``catalog.schema.table``) must exist; a name already taken must be a Delta table, not a view.

Remote locations (``s3://``, ``abfss://``, ``dbfs:/``) are left to the store: checking them
would need credentials the check itself could fail on. So are local paths of a Spark Connect
session: they are paths on the server's machine, which this process may not see; the run says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.config.paths import is_local
from pipelines.errors import ConfigError
from pipelines.runtime.sessions import is_connect
from pipelines.storage import catalog
from pipelines.storage.tables import TableRef


def tables(config: PipelineConfig) -> list[tuple[str, TableRef]]:
    """Every table a run writes, with the config key that places it."""
    found = [("target", config.target.ref), ("target.quarantine", config.target.quarantine_ref),
             *config.companion_tables()]
    if config.quality.enabled:
        found += [("quality.results", config.quality.results_ref),
                  ("quality.metrics", config.quality.metrics_ref)]
    return found


def check_locations(spark: SparkSession, config: PipelineConfig) -> list[str]:
    """Fail before anything is created if a location the run writes cannot be used.

    Returns:
        Lines saying which checks could not run here (none in classic mode).

    Raises:
        ConfigError: naming the setting, the location and what to do.
    """
    folders: dict[str, str] = {}
    for key, ref in tables(config):
        prefix = "target." if key == "target" else f"{key}_"
        if ref.name:
            _check_schema(spark, f"{prefix}table", ref.name)
        else:
            folders[f"{prefix}path"] = str(ref.path)
    folders["checkpoint"] = config.checkpoint
    if config.quality.enabled:
        folders["quality.docs_dir"] = config.quality.docs_dir
    _check_apart(folders)
    local = {k: v for k, v in folders.items() if is_local(v)}
    if local and is_connect(spark):
        return [f"preflight: {', '.join(sorted(local))} are paths on the Spark Connect "
                "server's machine; whether they can be written is checked there, at the first "
                "write"]
    for key, location in local.items():
        _check_local(key, location, table=key.endswith("path"))
    return []


def _comparable(location: str) -> str:
    """A location as compared with the others: a local path absolute, its symbolic links
    resolved (two spellings of one folder are one location), ``file:`` URIs as paths."""
    plain = location
    for scheme in ("file://", "file:"):
        if plain.startswith(scheme):
            plain = plain[len(scheme):]
            break
    if is_local(plain):
        return os.path.realpath(plain)
    return os.path.normpath(location).rstrip("/")


def _check_apart(folders: dict[str, str]) -> None:
    """No two locations may be one, and nothing may sit inside a table's folder.

    A folder inside a table's folder would be taken for the table's own files: VACUUM of that
    table deletes every file its log does not list, so the quarantine's data inside the target
    would be lost. Hidden children (``_checkpoints``, ``.x``) are left alone, as Delta does.
    """
    seen: dict[str, str] = {}
    for key, location in folders.items():
        same = seen.setdefault(_comparable(location), key)
        if same != key:
            raise ConfigError(f"{same} and {key} are the same location ({location}); give each "
                              "its own folder.")
    for outer, outer_key in seen.items():
        if not outer_key.endswith("path"):  # a table's folder
            continue
        for inner, inner_key in seen.items():
            rest = inner[len(outer):].lstrip("/") if inner.startswith(outer + "/") else ""
            if rest and not rest.startswith(("_", ".")):
                raise ConfigError(
                    f"{inner_key} {folders[inner_key]} is inside {outer_key} "
                    f"{folders[outer_key]}: a VACUUM of that table would delete its files; "
                    "give each its own folder.")


def _check_local(key: str, location: str, *, table: bool) -> None:
    path = Path(location)
    if table and path.is_dir() and not (path / "_delta_log").is_dir() and any(path.iterdir()):
        raise ConfigError(f"{key} {location} is a folder with files but not a Delta table; "
                          f"point {key} at a new folder or an existing Delta table.")
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{key} {location} cannot be created: {folder} is a file, not a "
                          f"folder. Point {key} at a folder deltasink can write to.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{key} {location} cannot be created: {folder} is not writable. "
                          f"Fix its permissions or point {key} elsewhere.")
    # Where an existing table or checkpoint writes next: its folder may be writable and these
    # not (a restore as another user, a read-only copy); the run would fail at its first commit.
    inner = ("_delta_log",) if table else ("offsets", "commits")
    for name in inner:
        below = path / name
        if below.is_dir() and not os.access(below, os.W_OK | os.X_OK):
            raise ConfigError(f"{key} {location}: its {name} folder is not writable. Fix its "
                              f"permissions or point {key} elsewhere.")


def _check_schema(spark: SparkSession, key: str, name: str) -> None:
    """A catalog table's catalog and schema exist, and the name, if taken, is a Delta table.

    Only a look the session is not allowed to take is left to the write (which then says why);
    every answer the catalog gives is checked (:func:`pipelines.storage.catalog.check_name`).
    """
    try:
        catalog.check_name(spark, key, name)
    except ConfigError:
        raise
    except Exception as exc:  # no permission to look: the write will say
        if "PERMISSION" not in str(exc).upper() and "DENIED" not in str(exc).upper():
            raise
