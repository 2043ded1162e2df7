"""The configuration reference: every key of :class:`PipelineConfig`, read from the model."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from pipelines.config.cadence import Cadence
from pipelines.config.model import PipelineConfig
from pipelines.config.starter import starter_config
from pipelines.config.table_properties import COLUMN_MAPPING, PROPERTIES, REFUSED_PREFIXES
from pipelines.reference.markdown import cell, code, generated_note, table

#: Validators that make a number field take a duration (``2m``) or a window (``1d``, ``1h``).
_DURATION_VALIDATORS = {"parse_duration": "duration", "_optional_seconds": "duration",
                        "parse_window": "days or duration"}


@dataclass(frozen=True)
class ConfigKey:
    """One key of the config file."""

    key: str
    """Dotted path, e.g. ``source.broker_timeout``."""
    type: str
    default: str
    constraints: str
    description: str
    section: bool
    """A mapping of further keys (``source``, ``source.avro``), not a value."""


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model an annotation holds (``AvroConfig | None`` too), or None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) \
                and candidate.__name__.endswith("Config"):
            return candidate
    return None


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return " \\| ".join(code(str(a)) for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (", or null" if type(None) in args else "")
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if origin is dict or origin is Mapping:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean",
              SecretStr: "string (secret)", timedelta: "duration", Any: "any",
              Cadence: "duration or batch count"}
    return simple.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _seconds(value: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


def _default(field: FieldInfo, duration: bool) -> str:
    if field.is_required():
        return "**required**"
    value = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
    if value is PydanticUndefined or value is None:
        return code("null") if value is None else ""
    if isinstance(value, Cadence):
        return code(_seconds(value.seconds) if value.seconds else f"{value.batches} batches")
    if isinstance(value, BaseModel):
        return ""
    if duration and isinstance(value, int | float) and not isinstance(value, bool):
        return code(_seconds(float(value)) if field.annotation is not int else f"{value}d")
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, tuple):
        return code("[" + ", ".join(map(str, value)) + "]")
    if isinstance(value, Mapping):
        return code("{}")
    return code(str(value))


def _constraints(field: FieldInfo) -> str:
    words = []
    for meta in field.metadata:
        for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            if getattr(meta, attr, None) is not None:
                words.append(f"{sign} {getattr(meta, attr)}")
        if getattr(meta, "pattern", None):
            words.append(f"matches {code(str(meta.pattern))}")
    return ", ".join(words)


def _durations(model: type[BaseModel]) -> dict[str, str]:
    found = {}
    for decorator in model.__pydantic_decorators__.field_validators.values():
        label = _DURATION_VALIDATORS.get(getattr(decorator.func, "__name__", ""))
        if label:
            found.update(dict.fromkeys(decorator.info.fields, label))
    return found


def config_keys(model: type[BaseModel] = PipelineConfig, prefix: str = "") -> list[ConfigKey]:
    """Every key of ``model``, sections first-level included, in declaration order."""
    keys: list[ConfigKey] = []
    durations = _durations(model)
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        key = prefix + (field.alias or name)
        section = _section_model(field.annotation)
        type_name = durations.get(name) or ("section" if section else _type_name(field.annotation))
        keys.append(ConfigKey(key=key, type=type_name, default=_default(field, name in durations),
                              constraints=_constraints(field),
                              description=field.description or "", section=section is not None))
        if section is not None:
            keys += config_keys(section, key + ".")
    return keys


def _rules(model: type[BaseModel]) -> list[str]:
    decorators = model.__pydantic_decorators__
    funcs: list[Any] = [d.func for d in decorators.model_validators.values()]
    funcs += [d.func for d in decorators.field_validators.values()]
    docs = [getattr(f, "__doc__", None) for f in funcs]
    return [cell(d) for d in docs if d and getattr(d, "strip", None) and "\n\n" not in d]


def _section_rows(keys: list[ConfigKey]) -> list[list[str]]:
    return [[code(k.key), k.type, k.default, k.constraints, cell(k.description)] for k in keys]


def _sections() -> list[tuple[str, type[BaseModel]]]:
    found: list[tuple[str, type[BaseModel]]] = [("", PipelineConfig)]
    for key in config_keys():
        if key.section:
            model: type[BaseModel] = PipelineConfig
            for part in key.key.split("."):
                field = next(f for n, f in model.model_fields.items() if (f.alias or n) == part)
                model = _section_model(field.annotation) or model
            found.append((key.key, model))
    return found


def _properties() -> list[str]:
    """The *Table properties* section: Delta 4.0.0's keys, accepted or refused, and why."""
    rows = []
    for prop in sorted(PROPERTIES.values(), key=lambda p: p.refused):
        values = " \\| ".join(map(code, prop.values)) if isinstance(prop.values, tuple) \
            else prop.values
        later = "refused" if prop.refused else \
            ("none -> name only" if prop.key == COLUMN_MAPPING else "yes")
        rows.append([code(prop.key), values, later, cell(prop.note)])
    prefixes = "".join(f"- {code(p + '*')}: refused, {cell(why)}.\n"
                       for p, why in REFUSED_PREFIXES.items())
    return ["## Table properties\n",
            "The keys `target.properties` and `target.quarantine_properties` accept: delta-spark "
            "4.0.0's own (`DeltaConfigs`), each set at creation (`CREATE TABLE ... TBLPROPERTIES`) "
            "and, when the config changes it, on the existing table (`ALTER TABLE ... SET "
            "TBLPROPERTIES`, a commit of its own before the run writes). Keys are matched in any "
            "case; a `delta.*` key Delta does not know is refused, and so is a value Delta "
            "would refuse. Keys without the `delta.` prefix are free-form (Spark's reserved "
            "`owner`, `location`, `comment`, ... excepted).\n",
            table(["key", "values", "on an existing table", "for deltasink"], rows),
            "Also refused:\n\n" + prefixes]


def render() -> str:
    """The configuration reference page (Markdown)."""
    keys = config_keys()
    out = ["# Configuration reference\n",
           generated_note("the config model, `pipelines/config/model.py` (with `target.py`, "
                          "`quality.py`, `avro.py`, `databricks.py` and `cadence.py`)"),
           "One YAML file per pipeline. Unknown keys are errors; relative paths are relative to "
           "the config file's folder, defaults included. Durations are written `30s`, `2m`, "
           "`1h` or `1d`. Any key can be overridden by an environment variable "
           "([environment variables](environment.md)).\n"]
    for prefix, model in _sections():
        depth = prefix.count(".")
        rows = [k for k in keys if k.key.rpartition(".")[0] == prefix
                and (prefix or "." not in k.key)]
        title = f"`{prefix}`" if prefix else "Top level"
        out += [f"##{'#' * depth} {title}\n", cell(model.__doc__ or "") + "\n",
                table(["key", "type", "default", "constraints", "meaning"], _section_rows(rows))]
        rules = _rules(model)
        if rules:
            out.append("Checked when the file is loaded:\n\n" + "".join(f"- {r}\n" for r in rules))
    out += _properties()
    starter = starter_config(topic="orders", bootstrap_servers="127.0.0.1:9092",
                             target="./lake/orders", out=Path("orders.yml"), name="orders")
    out += ["## Example: the starter config\n",
            "What `deltasink init --topic orders --bootstrap-servers 127.0.0.1:9092 "
            "--target ./lake/orders` writes: the required keys, and the common optional ones "
            "commented out with their defaults.\n",
            "```yaml\n" + starter + "```\n"]
    return "\n".join(out)
