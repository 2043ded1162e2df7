"""Load ``databricks.yml`` and its includes, and resolve one target the way the CLI does.

This mirrors the parts of ``databricks bundle validate`` that matter without a workspace:
includes are merged into ``resources`` (remembering which file declared each resource, since
relative paths are relative to that file), the functions named in ``python.resources`` are run
through ``databricks.bundles.build`` from the bundle root as the CLI runs them (the locations
they report are their resources' origin), the target's overrides are applied, variables get
their value from ``--var`` overrides, then the target, then the default (a variable with none of
those is an error, as in the CLI), and ``${...}`` references are substituted.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")
#: Values the CLI would fill in from the workspace at deploy time.
WORKSPACE_CONTEXT = {"workspace.current_user.userName": "someone@example.com",
                     "workspace.file_path": "/Workspace/Users/someone@example.com/.bundle/files"}
#: Values for the variables that have no default (what ``--var`` would pass).
REQUIRED_VARS = {"warehouse_id": "0123456789abcdef",
                 "service_principal": "11111111-2222-3333-4444-555555555555"}


class MissingVariables(Exception):
    """Variables with no value from ``--var``, the target or a default."""


@dataclass(frozen=True)
class LoadedBundle:
    """The merged configuration and, per ``(kind, key)`` resource, the file that declared it."""

    config: dict[str, Any]
    origin: dict[tuple[str, str], Path]
    root: Path


def load_bundle(root: Path = ROOT) -> LoadedBundle:
    """Read ``databricks.yml`` and merge the resources of every included file."""
    main = root / "databricks.yml"
    config: dict[str, Any] = yaml.safe_load(main.read_text(encoding="utf-8"))
    origin = {(kind, key): main for kind, items in config.get("resources", {}).items()
              for key in items}
    resources = config.setdefault("resources", {})
    for pattern in config.get("include", []):
        files = sorted(root.glob(pattern))
        if not files:
            raise FileNotFoundError(f"include pattern {pattern!r} matches no file")
        for file in files:
            doc = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
            extra = set(doc) - {"resources"}
            if extra:
                raise ValueError(f"{file}: only 'resources' expected in an include, got {extra}")
            for kind, items in doc.get("resources", {}).items():
                for key, value in items.items():
                    if (kind, key) in origin:
                        raise ValueError(f"{kind}.{key} declared twice")
                    resources.setdefault(kind, {})[key] = value
                    origin[(kind, key)] = file
    for kind, key, value, file in python_resources(root, config):
        if (kind, key) in origin:
            raise ValueError(f"{kind}.{key} declared twice")
        resources.setdefault(kind, {})[key] = value
        origin[(kind, key)] = file
    return LoadedBundle(config, origin, root)


def python_resources(root: Path, config: dict[str, Any],
                     target: str = "dev") -> list[tuple[str, str, dict[str, Any], Path]]:
    """Run the ``python.resources`` functions through ``databricks.bundles.build``, as the CLI
    does: ``python -m databricks.bundles.build --phase load_resources`` from the bundle root,
    with the bundle as JSON input (variables as ``{"value": ...}``); its diagnostics must be
    empty.

    Returns:
        ``(kind, key, resource as a dict, the file its location names)`` for every resource
        the functions added.
    """
    if not config.get("python", {}).get("resources"):
        return []
    defaults = {k: {"value": v.get("default")} for k, v in config.get("variables", {}).items()}
    before = {(kind, key) for kind, items in config.get("resources", {}).items() for key in items}
    payload = {"bundle": {**config["bundle"], "target": target}, "python": config["python"],
               "variables": defaults, "resources": config.get("resources", {})}
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: Path(tmp) / f"{name}.json"
                 for name in ("input", "output", "diagnostics", "locations")}
        files["input"].write_text(json.dumps(payload), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "databricks.bundles.build", "--phase", "load_resources",
             *(arg for name, file in files.items() for arg in (f"--{name}", str(file)))],
            cwd=root, capture_output=True, text=True, timeout=300, check=False)
        diagnostics = files["diagnostics"].read_text(encoding="utf-8").strip()
        if done.returncode != 0 or diagnostics:
            raise ValueError(f"load_resources failed: {diagnostics or done.stderr[-3000:]}")
        output = json.loads(files["output"].read_text(encoding="utf-8"))
        locations = {entry["path"]: entry["file"] for entry in map(
            json.loads, files["locations"].read_text(encoding="utf-8").splitlines())}
    found = []
    for kind, items in output.get("resources", {}).items():
        for key, value in items.items():
            if (kind, key) not in before:
                file = Path(locations[f"resources.{kind}.{key}"])
                found.append((kind, key, value, file if file.is_absolute() else root / file))
    return found


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def variable_values(bundle: LoadedBundle, target: str,
                    overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each variable's value for ``target``: ``--var`` > target > default.

    Raises:
        MissingVariables: naming every variable left without a value.
    """
    overrides = overrides or {}
    declared = bundle.config.get("variables", {})
    in_target = bundle.config["targets"][target].get("variables", {}) or {}
    values: dict[str, Any] = {}
    missing = []
    for name, spec in declared.items():
        if name in overrides:
            values[name] = overrides[name]
        elif name in in_target:
            value = in_target[name]
            values[name] = value["default"] if isinstance(value, dict) else value
        elif "default" in spec:
            values[name] = spec["default"]
        else:
            missing.append(name)
    unknown = (set(in_target) | set(overrides)) - set(declared)
    if unknown:
        raise ValueError(f"values for undeclared variables: {sorted(unknown)}")
    if missing:
        raise MissingVariables(f"no value assigned to required variable(s) {sorted(missing)}")
    return values


def substitute(value: Any, context: dict[str, Any]) -> Any:
    """Replace ``${name}`` references found in ``context``; leave unknown ones in place."""
    if isinstance(value, dict):
        return {k: substitute(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, context) for v in value]
    if not isinstance(value, str):
        return value
    whole = REFERENCE.fullmatch(value)
    if whole and whole.group(1) in context:
        return context[whole.group(1)]  # keeps ints and complex values intact
    return REFERENCE.sub(lambda m: str(context.get(m.group(1), m.group(0))), value)


def unresolved(value: Any) -> set[str]:
    """Every ``${...}`` reference still present in ``value``."""
    if isinstance(value, dict):
        return set().union(*(unresolved(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(unresolved(v) for v in value)) if value else set()
    return set(REFERENCE.findall(value)) if isinstance(value, str) else set()


def resolve_target(bundle: LoadedBundle, target: str,
                   overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The configuration of ``target`` with overrides applied and references substituted.

    Returns:
        The resolved config; ``variables`` holds the final variable values.
    """
    config = copy.deepcopy(bundle.config)
    spec = config.pop("targets")[target] or {}
    for key in ("bundle", "workspace", "run_as", "presets", "artifacts", "resources"):
        if key in spec:
            config[key] = _merge(config.get(key, {}), spec[key])
    config["mode"] = spec.get("mode")
    config["default"] = spec.get("default", False)
    values = variable_values(bundle, target, overrides)
    context: dict[str, Any] = {**WORKSPACE_CONTEXT, "bundle.name": config["bundle"]["name"],
                               "bundle.target": target}
    for _ in range(5):  # variables may reference other variables or workspace values
        values = {k: substitute(v, {**context, **_var_context(values)}) for k, v in values.items()}
    context.update(_var_context(values))
    config.pop("variables", None)
    resolved: dict[str, Any] = substitute(config, context)
    resolved["variables"] = values
    return resolved


def _var_context(values: dict[str, Any]) -> dict[str, Any]:
    return {f"var.{k}": v for k, v in values.items()}


#: Which job kind a task is, by its notebook (and, for ingest, its trigger).
_NOTEBOOK_KINDS = {"ingest.py": "ingest", "validate.py": "ingest", "maintenance.py": "maintenance"}


def pipeline_jobs(jobs: dict[str, Any], pipeline: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Per kind (``ingest``, ``maintenance``, ``continuous``), the job that runs ``pipeline``:
    its key and the job with only that pipeline's tasks (told by the config file they pass).

    Jobs are grouped (one ingest job may run many pipelines); every kind must hold the
    pipeline's tasks in exactly one job.
    """
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, job in jobs.items():
        mine = [t for t in job["tasks"] if t["notebook_task"]["base_parameters"]["config"]
                .endswith(f"/notebooks/pipelines.d/{pipeline}.yml")]
        if not mine:
            continue
        params = mine[0]["notebook_task"]["base_parameters"]
        kind = _NOTEBOOK_KINDS[Path(mine[0]["notebook_task"]["notebook_path"]).name]
        if params.get("trigger") == "continuous":
            kind = "continuous"
        assert kind not in found, f"{pipeline}: two {kind} jobs ({found[kind][0]}, {key})"
        found[kind] = (key, {**job, "tasks": mine})
    return found
