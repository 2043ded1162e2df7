"""Every module path, Python module and config key the docs and the README name exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pipelines.reference.config import config_keys
from tests.docs.sources import ROOT, inline_code, markdown_files

_PATH = re.compile(r"(?<![\w/.-])((?:pipelines|quality|schemas|tests|bench|notebooks|docs|\.ci)"
                   r"/[\w./-]*[\w/])")
_MODULE = re.compile(r"^((?:pipelines|schemas|bench)(?:\.\w+)+)(?::(\w+))?$")
_KEY = re.compile(r"^(source|target|quality|spark|databricks)(\.[a-z_]+)+$")
#: Spark's own settings the docs name; they look like ``spark.*`` config keys but are not.
SPARK_SETTINGS = frozenset({"spark.jars", "spark.jars.packages", "spark.jars.excludes",
                            "spark.driver.extraJavaOptions", "spark.sql.ansi.enabled",
                            "spark.hadoop.delta.enableFastS3AListFrom"})
#: Mappings whose keys are free (Kafka options, Spark settings, secret names).
FREE_MAPPINGS = ("source.options.", "spark.conf.", "databricks.secrets.")


def _where(file: Path) -> str:
    return file.relative_to(ROOT).as_posix()


def named_paths() -> list[tuple[str, str]]:
    return sorted({(_where(f), p) for f in markdown_files()
                   for p in _PATH.findall(f.read_text(encoding="utf-8"))})


def named_modules() -> list[tuple[str, str]]:
    return sorted({(_where(f), s) for f in markdown_files() for s in inline_code(f)
                   if _MODULE.match(s)})


def named_keys() -> list[tuple[str, str]]:
    return sorted({(_where(f), s) for f in markdown_files() for s in inline_code(f)
                   if _KEY.match(s)})


def test_the_docs_name_paths_modules_and_keys() -> None:
    assert len(named_paths()) >= 50
    assert len(named_keys()) >= 30
    assert named_modules()


@pytest.mark.parametrize(("where", "path"), named_paths(), ids=lambda v: str(v))
def test_named_path_exists(where: str, path: str) -> None:
    assert (ROOT / path).exists(), f"{where} names {path}, which does not exist"


@pytest.mark.parametrize(("where", "name"), named_modules(), ids=lambda v: str(v))
def test_named_module_and_attribute_exist(where: str, name: str) -> None:
    match = _MODULE.match(name)
    assert match
    parts = match[1].split(".")
    attribute = match[2]
    for cut in range(len(parts), 0, -1):  # the longest prefix that is a module
        base = ROOT.joinpath(*parts[:cut])
        module = base.with_suffix(".py")
        file = module if module.is_file() else base / "__init__.py"
        if file.is_file():
            rest = [*parts[cut:], *([attribute] if attribute else [])]
            break
    else:
        pytest.fail(f"{where} names {name}: no such module")
    if rest:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(
            n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Name)}
        assert rest[0] in defined, f"{where} names {name}: {file.name} defines no {rest[0]}"


@pytest.mark.parametrize(("where", "key"), named_keys(), ids=lambda v: str(v))
def test_named_config_key_exists(where: str, key: str) -> None:
    keys = {k.key for k in config_keys()}
    if (ROOT / key).is_file():  # a file name, e.g. databricks.yml
        return
    if key in SPARK_SETTINGS or key.startswith(FREE_MAPPINGS):
        return
    assert key in keys, f"{where} names config key {key}, which the model does not have"
