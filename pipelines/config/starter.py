"""``deltasink init``: a commented starter config for one topic.

Only the required keys are active; the common optional ones are commented out with their
defaults (``tests/pipelines/config/test_starter.py`` uncomments them all and checks that the
config does not change), so the file doubles as a reference.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pipelines.config.loader import load_config
from pipelines.config.paths import is_local
from pipelines.errors import ConfigError

#: A catalog table name (``schema.table`` or ``catalog.schema.table``), as for notebook widgets.
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,2}$")

_TEMPLATE = """\
# deltasink pipeline config for topic {topic}, written by `deltasink init`.
# Only the required keys are set; each commented key shows its default (uncomment to change).
# Relative paths are relative to this file's folder, defaults included.
# Environment variables override keys, DELTASINK_<SECTION>__<KEY> (e.g.
# DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG for a secret Kafka option); see the docs'
# configuration and environment variables reference.

name: {name}{pad_name}# letters, digits, _ . -; part of every commit's txnAppId
# schema: events_v1                  # registered in schemas/, or a YAML file (orders.schema.yml)

source:
  bootstrap_servers: {bootstrap}
  topics: [{topic_yaml}]{pad_topics}# or topic_pattern: "orders.*" instead
  # starting_offsets: earliest       # earliest | latest: only for a brand-new table
  # max_records_per_batch: 500000    # records per micro-batch (maxOffsetsPerTrigger)
  # isolation_level: read_committed
  # fail_on_data_loss: true          # false: skip offsets that Kafka retention deleted
  # max_record_bytes: 1048576        # larger records are quarantined as "oversized"
  # broker_timeout: 2m               # how long a run waits for an unavailable broker
  # options: {{}}                      # extra Kafka client settings (security.protocol, sasl.*)

target:
  {target_key}: {target}
  # {quarantine_key}: {quarantine}
  # dedup_key: event_id              # default: the schema's key (one field or several)
  # partition_by: [event_date]
  # dedup_window: 15m                # copies' event times this close count as one; 1d: dates +-1
  # commit_retries: 10               # retries on Delta concurrency conflicts

checkpoint: {checkpoint}

# quality:
#   enabled: true                    # validate after every run, record per-batch metrics
#   docs_dir: ./lake/_quality/docs
#   results_path: ./lake/_quality/results       # or results_table: catalog.schema.table
#   metrics_path: ./lake/_quality/run_metrics   # or metrics_table: catalog.schema.table
#   max_quarantine_ratio: 0.01
#   max_future_skew: 1h

# spark:                             # ignored on Databricks (the runtime's session is used)
#   master: local[2]                 # local[N], local-cluster[2,1,1024], spark://host:7077
#   conf: {{}}                         # extra Spark settings, applied last (values are secret)
"""


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar: plain when it reads back as the same string, else quoted."""
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _pad(text: str, column: int = 37) -> str:
    return " " * max(1, column - len(text))


def _relative_to(location: str, folder: Path) -> str:
    """A local ``location`` given on the command line (relative to the working directory),
    rewritten relative to ``folder``, where the config file will be."""
    if not is_local(location) or os.path.isabs(location):
        return location
    rel = os.path.relpath(Path(location).resolve(), folder.resolve())
    return rel if rel.startswith("..") else f"./{rel}"


def default_name(topic: str) -> str:
    """A pipeline name for ``topic``: the characters a name may hold, at most 100."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", topic)[:100] or "pipeline"


def starter_config(*, topic: str, bootstrap_servers: str, target: str, out: Path,
                   name: str | None = None, checkpoint: str | None = None) -> str:
    """The text of a starter config for ``topic``, to be written at ``out``.

    Args:
        topic: the Kafka topic to land.
        bootstrap_servers: ``host:port[,host:port]``.
        target: a folder or URI for the target table, or a catalog name
            (``catalog.schema.table``). A relative folder is relative to the working directory.
        out: where the file will be written (relative paths in it are relative to its folder).
        name: the pipeline name (default: from the topic).
        checkpoint: the checkpoint folder (default: ``_checkpoints/<name>`` next to a target
            folder, ``./lake/_checkpoints/<name>`` for a catalog table).

    Returns:
        The YAML text, with only the required keys active.
    """
    name = name or default_name(topic)
    folder = out.resolve().parent
    is_table = "/" not in target and ":" not in target and bool(_TABLE_NAME.match(target))
    if is_table:
        target_text, quarantine_key = target, "quarantine_table"
        default_checkpoint = f"./lake/_checkpoints/{name}"
    else:
        target_text, quarantine_key = _relative_to(target, folder), "quarantine_path"
        parent = target_text.rstrip("/").rpartition("/")[0] or "."
        default_checkpoint = f"{parent}/_checkpoints/{name}"
    checkpoint_text = _relative_to(checkpoint, folder) if checkpoint else default_checkpoint
    topic_yaml = _scalar(topic)
    return _TEMPLATE.format(
        topic=topic, name=_scalar(name), pad_name=_pad(f"name: {_scalar(name)}"),
        bootstrap=_scalar(bootstrap_servers), topic_yaml=topic_yaml,
        pad_topics=_pad(f"  topics: [{topic_yaml}]"),
        target_key="table" if is_table else "path", target=_scalar(target_text),
        quarantine_key=quarantine_key, quarantine=_scalar(f"{target_text}_quarantine"),
        checkpoint=_scalar(checkpoint_text))


def write_starter(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` after checking it loads; never overwrite an existing file.

    Raises:
        ConfigError: ``out`` exists, or the config would not load (e.g. a bad ``--name``).
    """
    refused = ConfigError(f"{out} already exists; deltasink init never overwrites a file. "
                          "Pass --out with a new file name, or remove it first.")
    if out.exists():
        raise refused
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = out.with_name(f".{out.name}.init")  # the same folder: relative paths resolve alike
    staged.write_text(text, encoding="utf-8")
    try:
        load_config(staged, environ={})
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(str(staged), str(out))) from None
    finally:
        staged.unlink()
    try:
        with open(out, "x", encoding="utf-8") as file:  # "x": fails if it appeared meanwhile
            file.write(text)
    except FileExistsError:
        raise refused from None
