"""Databricks notebook widgets: their names, reading them, and mapping them to a config.

A table widget takes a Unity Catalog name (``catalog.schema.table``) or a path (containing ``/``
or a URI scheme). Secrets come only from the ``secrets`` callable (``dbutils.secrets.get``) and
are never printed. :mod:`pipelines.jobs` holds the entry points that use them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.config.loader import parse_config
from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError
from pipelines.runtime.spark import on_databricks

#: ``secrets(scope, key) -> value``, i.e. ``dbutils.secrets.get``.
SecretGetter = Callable[[str, str], str]
#: Keys read from the secret scope named by the ``secret_scope`` widget.
SASL_USERNAME_KEY = "kafka-sasl-username"
SASL_PASSWORD_KEY = "kafka-sasl-password"

COMMON_WIDGETS = ("pipeline_name", "bootstrap_servers", "topics", "target", "quarantine",
                  "checkpoint", "quality_results", "run_metrics", "quality_docs")
#: The optional lag and staleness thresholds (``quality.max_lag_records`` and
#: ``quality.max_staleness``) of the validate task and of cadence validation; empty: not checked.
THRESHOLD_WIDGETS = ("max_lag_records", "max_staleness")
#: ``quality.validate_every`` / ``quality.on_failure`` (continuous only); empty: the defaults.
CADENCE_WIDGETS = ("validate_every", "on_failure")
INGEST_WIDGETS = (*COMMON_WIDGETS, "trigger", "interval", "secret_scope", "sasl_mechanism",
                  *CADENCE_WIDGETS, *THRESHOLD_WIDGETS)
VALIDATE_WIDGETS = (*COMMON_WIDGETS, "run_id", "full", *THRESHOLD_WIDGETS)
MAINTENANCE_WIDGETS = (*COMMON_WIDGETS, "retain_hours")
#: Widgets that may be empty; every other one must be set.
OPTIONAL_WIDGETS = frozenset({"quarantine", "secret_scope", "sasl_mechanism", "run_id",
                              *THRESHOLD_WIDGETS, *CADENCE_WIDGETS})

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,2}$")


def read_widgets(get: Callable[[str], str], names: Sequence[str]) -> dict[str, str]:
    """Read every widget's value; fail fast when a required one is missing or empty.

    Args:
        get: ``dbutils.widgets.get``.
        names: the notebook's widgets, e.g. :data:`INGEST_WIDGETS`.

    Returns:
        The values by widget name, stripped of surrounding whitespace.

    Raises:
        ConfigError: naming every required widget that is undefined or empty.
    """
    values: dict[str, str] = {}
    for name in names:
        try:
            values[name] = str(get(name)).strip()
        except Exception:  # dbutils raises InputWidgetNotDefined (via py4j) for unknown names
            values[name] = ""
    missing = [n for n in names if not values[n] and n not in OPTIONAL_WIDGETS]
    if missing:
        raise ConfigError(f"notebook widget(s) missing or empty: {', '.join(missing)}. Set them "
                          "in the task's base_parameters (notebooks/resources/jobs.yml) or in "
                          "the notebook's widget bar.")
    return values


def _location(params: Mapping[str, str], widget: str) -> tuple[str | None, str | None]:
    """Split a table widget's value into ``(path, table)``; both ``None`` when it is empty."""
    value = params.get(widget, "").strip()
    if not value:
        return None, None
    if "/" in value or ":" in value:
        return value, None
    if _TABLE_NAME.match(value):
        return None, value
    raise ConfigError(f"widget '{widget}': '{value}' is neither a path (containing '/') nor a "
                      "table name like catalog.schema.table")


def kafka_auth_options(params: Mapping[str, str], secrets: SecretGetter | None) -> dict[str, str]:
    """Kafka SASL settings from the ``secret_scope`` widget's scope (``{}`` without a scope).

    Args:
        params: widget values (``secret_scope``, ``sasl_mechanism``).
        secrets: ``dbutils.secrets.get``; required when ``secret_scope`` is set.

    Returns:
        ``security.protocol``, ``sasl.mechanism`` and ``sasl.jaas.config`` (secret), or ``{}``.
    """
    scope = params.get("secret_scope", "").strip()
    if not scope:
        return {}
    if secrets is None:
        raise ConfigError(f"widget 'secret_scope' is '{scope}' but no secrets getter was given")
    mechanism = params.get("sasl_mechanism", "").strip().upper() or "PLAIN"
    if mechanism not in _LOGIN_MODULES:
        raise ConfigError(f"widget 'sasl_mechanism': '{mechanism}' is not one of "
                          f"{', '.join(sorted(_LOGIN_MODULES))}")
    user, password = secrets(scope, SASL_USERNAME_KEY), secrets(scope, SASL_PASSWORD_KEY)
    if any(c in v for v in (user, password) for c in '"\\'):
        raise ConfigError(f"secret {scope}/{SASL_USERNAME_KEY} or {SASL_PASSWORD_KEY} contains a "
                          "quote or backslash, which a JAAS config cannot hold")
    # The Databricks runtime shades the Kafka client under ``kafkashaded.``.
    module = ("kafkashaded." if on_databricks() else "") + _LOGIN_MODULES[mechanism]
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{password}";'}


def build_config(params: Mapping[str, str], secrets: SecretGetter | None = None) -> PipelineConfig:
    """Map widget values to a validated :class:`PipelineConfig`.

    Args:
        params: widget values, as returned by :func:`read_widgets`.
        secrets: ``dbutils.secrets.get``, used only when ``secret_scope`` is set.

    Returns:
        The frozen config; a bad value raises :class:`ConfigError` naming the widget or key.
    """
    t_path, t_table = _location(params, "target")
    q_path, q_table = _location(params, "quarantine")
    r_path, r_table = _location(params, "quality_results")
    m_path, m_table = _location(params, "run_metrics")
    raw: dict[str, Any] = {
        "name": params["pipeline_name"],
        "source": {"bootstrap_servers": params["bootstrap_servers"],
                   "topics": [t.strip() for t in params["topics"].split(",") if t.strip()],
                   "options": kafka_auth_options(params, secrets)},
        "target": {"path": t_path, "table": t_table,
                   "quarantine_path": q_path, "quarantine_table": q_table},
        "checkpoint": params["checkpoint"],
        "quality": {"docs_dir": params["quality_docs"],
                    "results_path": r_path, "results_table": r_table,
                    "metrics_path": m_path, "metrics_table": m_table,
                    **{k: params[k] for k in (*THRESHOLD_WIDGETS, *CADENCE_WIDGETS)
                       if params.get(k, "").strip()}},
    }
    return parse_config(raw, source="notebook widgets")
