"""The generated reference covers the code: every config key, CLI flag, environment variable,
table column, widget, and the demo's steps."""

from __future__ import annotations

import ast
import re

from pipelines.config import env
from pipelines.reference import bundle, cli, config, environment, tables
from tests.docs.sources import ROOT


def test_every_config_key_is_in_the_configuration_reference_with_a_description() -> None:
    page = config.render()
    keys = config.config_keys()
    assert len(keys) >= 54
    for key in keys:
        assert f"`{key.key}`" in page, key.key
        assert key.description, f"{key.key} has no description (an attribute docstring)"


def test_every_subcommand_and_flag_is_in_the_cli_reference() -> None:
    page = cli.render()
    for command, options in cli.flags().items():
        if command:
            assert f"## `deltasink {command}`" in page, command
        for flag in options:
            assert f"`{flag}`" in page, (command, flag)


def test_every_environment_variable_is_in_the_environment_reference() -> None:
    page = environment.render()
    names = [*env.PROCESS_SETTINGS, *(v for v, _ in environment.override_names()),
             *(r.name for r in environment.environment_reads())]
    assert "DELTASINK_SOURCE__OPTIONS__<KEY>" in names and "SPARK_REMOTE" in names
    for name in names:
        assert f"`{name}`" in page, name


def test_every_variable_the_code_reads_is_documented() -> None:
    undocumented = [r for r in environment.environment_reads()
                    if r.name not in env.PROCESS_SETTINGS
                    and r.name not in environment.OTHER_VARIABLES]
    assert not undocumented, ("add these to pipelines/reference/environment.py "
                              f"OTHER_VARIABLES: {undocumented}")


def test_every_table_column_has_a_meaning() -> None:
    for title, names in tables.columns().items():
        missing = [n for n in names if n not in tables.MEANINGS]
        assert not missing, f"{title}: add to pipelines/reference/tables.py MEANINGS: {missing}"


def test_every_bundle_variable_and_widget_is_in_the_bundle_reference() -> None:
    page = bundle.render()
    for name in bundle.bundle_variables():
        assert f"`{name}`" in page, name
    for notebook, names in bundle.NOTEBOOKS:
        declared = {w.name for w in bundle.declared_widgets(ROOT / "notebooks" / notebook)}
        assert set(names) <= declared, (notebook, set(names) - declared)
    assert "**not declared**" not in page


def test_the_demo_page_heads_each_step_as_demo_py_prints_it() -> None:
    tree = ast.parse((ROOT / "pipelines/ops/demo.py").read_text(encoding="utf-8"))
    banners = [ast.literal_eval(node.args[0]) for node in ast.walk(tree)
               if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_banner"]
    page = (ROOT / "docs/getting-started/demo.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### (.+)$", page, re.M)
    assert headings == banners
