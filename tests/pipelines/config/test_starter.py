"""`deltasink init`: a starter config that loads as written, with true commented defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.config.loader import load_config

_COMMENTED_KEY = re.compile(r"^(\s*)# ?(\s*)([a-z_]+:.*)$")


def uncomment_every_key(text: str) -> str:
    return "\n".join(_COMMENTED_KEY.sub(r"\1\2\3", line) for line in text.splitlines())


def init(tmp_path: Path, *extra: str, target: str = "lake/orders") -> Path:
    out = tmp_path / "conf" / "orders.yml"
    assert main(["init", "--topic", "orders", "--bootstrap-servers", "broker-1:9092",
                 "--target", target, "--out", str(out), *extra]) == 0
    return out


def test_only_required_keys_are_active_and_commented_keys_show_the_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = init(tmp_path)
    text = out.read_text()
    active = [ln.split(":")[0].strip() for ln in text.splitlines()
              if ln.strip() and not ln.lstrip().startswith("#")]
    assert active == ["name", "source", "bootstrap_servers", "topics", "target", "path",
                      "checkpoint"]
    written = load_config(out, environ={})
    assert written.name == "orders" and written.source.topics == ("orders",)
    # The target was given relative to the working directory; the file says the same place.
    assert written.target.path == str(tmp_path / "lake" / "orders")
    assert written.checkpoint == str(tmp_path / "lake" / "_checkpoints" / "orders")
    everything = out.with_name("everything.yml")
    everything.write_text(uncomment_every_key(text))
    assert "quality:" in everything.read_text() and "# quality:" not in everything.read_text()
    defaults = load_config(everything, environ={})
    # quarantine_path's default is derived from the target: compare where it points.
    assert defaults.target.quarantine_ref == written.target.quarantine_ref
    unset = {"target": {"quarantine_path"}}
    assert defaults.model_dump(exclude=unset) == written.model_dump(exclude=unset)


def test_a_catalog_table_target_and_the_options(tmp_path: Path) -> None:
    out = init(tmp_path, "--name", "orders_bronze", "--checkpoint", "/data/cp/orders",
               target="main.bronze.orders")
    cfg = load_config(out, environ={})
    assert cfg.name == "orders_bronze" and cfg.target.table == "main.bronze.orders"
    assert cfg.target.quarantine_ref.name == "main.bronze.orders_quarantine"
    assert cfg.checkpoint == "/data/cp/orders"
    assert "# quarantine_table: main.bronze.orders_quarantine" in out.read_text()


def test_an_existing_file_is_never_overwritten(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "conf" / "orders.yml"
    out.parent.mkdir()
    out.write_text("mine\n")
    code = main(["init", "--topic", "orders", "--bootstrap-servers", "b:9092", "--target",
                 "/t", "--out", str(out)])
    assert code == 2 and out.read_text() == "mine\n"
    assert "already exists; deltasink init never overwrites" in capsys.readouterr().err
    assert sorted(p.name for p in out.parent.iterdir()) == ["orders.yml"]


def test_a_bad_name_is_refused_and_nothing_is_written(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "orders.yml"
    assert main(["init", "--topic", "orders", "--bootstrap-servers", "b:9092", "--target", "/t",
                 "--out", str(out), "--name", "bad name!"]) == 2
    err = capsys.readouterr().err
    assert f"{out}: invalid config" in err and "name" in err
    assert list(tmp_path.iterdir()) == []
