"""Config files that are not configs (issue 33 §3): each fails in one line, exit code 2.

Run in-process through ``pipelines.cli.main`` (the loader fails before any Spark session is
asked for), so these cost milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config.loader import load_config
from tests.support.configs import write_config

BROKEN = 'name: t\nsource: {bootstrap_servers: "x:1", topics: [a\nschema: events_v1\n'


@pytest.mark.parametrize(("content", "expected"), [
    pytest.param(BROKEN.encode(), "not valid YAML at line 3, column 7: expected ',' or ']', "
                 "but got ':' (while parsing a flow sequence from line 2)",
                 id="unclosed-flow-list"),
    pytest.param(b"name: t\n  source: x\n bad: [\n", "not valid YAML at line 2",
                 id="bad-indentation"),
    pytest.param(b"", "the config file is empty (or only comments)", id="empty"),
    pytest.param(b"# name: t\n\n   \n", "the config file is empty (or only comments)",
                 id="only-comments"),
    pytest.param(b"name: a\nname: b\n", "not valid YAML at line 2, column 1: duplicate key "
                                        "'name'", id="duplicate-top-level-key"),
    pytest.param(b"name: a\ntarget:\n  path: x\n  path: y\n", "duplicate key 'path'",
                 id="duplicate-nested-key"),
    pytest.param(b"- name: a\n", "expected a mapping of keys at the top level, found a list",
                 id="a-list"),
    pytest.param(b"name: a\n---\nname: b\n", "expected a single document", id="two-documents"),
    pytest.param(b"name: \xff\xfe\n", "not UTF-8 text (byte 6)", id="not-utf8"),
])
def test_a_config_file_that_is_not_a_config_fails_in_one_line_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
        expected: str) -> None:
    """Broken YAML names the line and column and what is wrong, without quoting the file (it may
    hold a secret); an empty file says so and points at ``deltasink init``; a key given twice is
    an error (plain YAML would keep the last silently)."""
    path = tmp_path / "pipeline.yml"
    path.write_bytes(content)

    code = main(["run", "--config", str(path)])

    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}"), err
    assert expected in err, err
    assert "Traceback" not in err


def test_a_folder_given_as_the_config_file_is_named(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["status", "--config", str(tmp_path)])

    err = capsys.readouterr().err
    assert code == 2
    assert err == f"error: {tmp_path} is a folder, not a config file (pass --config PATH to a " \
                  "YAML file)\n"


def test_a_config_with_a_byte_order_mark_still_loads(tmp_path: Path) -> None:
    """Never trust a no-op: the strict loader still reads a valid config that starts with the
    UTF-8 byte order mark some Windows editors write."""
    path = write_config(tmp_path, "127.0.0.1:9092", "orders")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    config = load_config(path, environ={})

    assert config.name == "orders_bronze"
    assert list(config.source.topics) == ["orders"]
