"""Config loading: strict keys, env overrides for secrets, relative paths, no secret leaks."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.errors import ConfigError

BASE = {"name": "orders_bronze",
        "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["orders"]},
        "target": {"path": "./lake/orders"}, "checkpoint": "./lake/_checkpoints/orders"}


def write(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_defaults_and_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, BASE), environ={})
    assert cfg.target.path == str(tmp_path / "lake" / "orders")
    assert cfg.checkpoint == str(tmp_path / "lake" / "_checkpoints" / "orders")
    assert cfg.target.quarantine_ref.path == str(tmp_path / "lake" / "orders_quarantine")
    assert cfg.source.isolation_level == "read_committed"
    assert cfg.source.starting_offsets == "earliest"
    assert cfg.target.partition_by == ("event_date",)
    assert cfg.quality.max_quarantine_ratio == 0.01
    assert cfg.quality.max_future_skew == 3600.0


def test_unknown_key_is_named_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "source": {**BASE["source"], "topicz": ["x"]}})  # type: ignore[dict-item]
    with pytest.raises(ConfigError) as err:
        load_config(path, environ={})
    assert "unknown key 'source.topicz'" in str(err.value)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(("patch", "message"), [
    ({"source": {"bootstrap_servers": "x"}},
     "set exactly one of source.topics or source.topic_pattern"),
    ({"source": {"topics": ["a"], "max_records_per_batch": 0}}, "source.max_records_per_batch"),
    ({"source": {"topics": ["a"], "starting_offsets": "middle"}}, "source.starting_offsets"),
    ({"name": "bad name!"}, "name"),
    ({"checkpoint": None}, "checkpoint"),
])
def test_bad_values_fail_clearly(tmp_path: Path, patch: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match="invalid config") as err:
        load_config(write(tmp_path, {**BASE, **patch}), environ={})
    assert message in str(err.value)


def test_missing_file_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yml")
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(tmp_path / "list.yml")


def test_env_overrides_secrets_and_never_shows_them(tmp_path: Path) -> None:
    env = {"DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": "s3cr3t-jaas",
           "DELTASINK_SOURCE__MAX_RECORDS_PER_BATCH": "500", "UNRELATED": "x"}
    cfg = load_config(write(tmp_path, BASE), environ=env)
    assert cfg.source.kafka_options() == {"sasl.jaas.config": "s3cr3t-jaas"}
    assert cfg.source.max_records_per_batch == 500
    assert "s3cr3t" not in repr(cfg) and "s3cr3t" not in cfg.describe


def test_spark_section_defaults_to_local_and_takes_env_overrides(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, BASE), environ={}).spark.master == "local[2]"
    raw = {**BASE, "spark": {"master": "local-cluster[2,1,1024]",
                             "conf": {"spark.executor.memory": "512m"}}}
    env = {"DELTASINK_SPARK__MASTER": "spark://head:7077",
           "DELTASINK_SPARK__CONF__SPARK_HADOOP_FS_S3A_SECRET_KEY": "s3cr3t-key"}
    cfg = load_config(write(tmp_path, raw), environ=env)
    assert cfg.spark.master == "spark://head:7077"
    assert cfg.spark.spark_conf() == {"spark.executor.memory": "512m",
                                      "spark.hadoop.fs.s3a.secret.key": "s3cr3t-key"}
    assert "s3cr3t" not in repr(cfg)


def test_invalid_secret_value_is_not_echoed(tmp_path: Path) -> None:
    env = {"DELTASINK_SOURCE__BROKER_TIMEOUT": "hunter2-password"}
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, BASE), environ=env)
    assert "source.broker_timeout" in str(err.value)
    assert "hunter2" not in str(err.value)


def test_cli_reports_bad_config_with_exit_code_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, {**BASE, "tagret": {}})
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'tagret'" in err and str(path) in err
    assert "Traceback" not in err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for command in ("setup", "broker", "produce", "run", "status", "validate", "report"):
        assert command in out


@pytest.mark.parametrize(("value", "days"), [("0d", 0), ("3d", 3), ("72h", 3), (2, 2), ("1d", 1)])
def test_dedup_window_is_whole_days(tmp_path: Path, value: object, days: int) -> None:
    target = {**BASE["target"], "dedup_window": value}  # type: ignore[dict-item]
    cfg = load_config(write(tmp_path, {**BASE, "target": target}), environ={})
    assert cfg.target.dedup_window == days
    assert (cfg.target.date_window, cfg.target.time_window) == (days, None)


KAFKA_TIME = {"name": "clicks", "key": "id", "event_time": "kafka.timestamp",
              "fields": {"id": {"type": "string", "required": True, "non_empty": True}}}


@pytest.mark.parametrize(("settings", "window"), [
    ({}, dt.timedelta(minutes=15)),  # insert-only, the event's own time: an event-time window
    ({"dedup_window": None}, dt.timedelta(minutes=15)),  # null is left out
    ({"partition_by": []}, dt.timedelta(minutes=15)),  # needs no event_date partition
    ({"mode": "upsert"}, 0),  # the key is matched table-wide
    ({"mode": "upsert", "dedup_window": "0d"}, 0),  # configs written for the old default
    ({"schema": KAFKA_TIME}, 1),  # the Kafka timestamp is set again by every send: whole days
    ({"schema": KAFKA_TIME, "partition_by": []}, 0),  # no dates: the key matches table-wide
])
def test_a_left_out_dedup_window_defaults_by_mode_and_schema(
        tmp_path: Path, settings: dict[str, object], window: object) -> None:
    target = {**BASE["target"], **{k: v for k, v in settings.items() if k != "schema"}}  # type: ignore[dict-item]
    schema = {"schema": settings["schema"]} if "schema" in settings else {}
    cfg = load_config(write(tmp_path, {**BASE, **schema, "target": target}), environ={})
    assert cfg.target.dedup_window == window


@pytest.mark.parametrize(("value", "window"), [
    ("1h", dt.timedelta(hours=1)), ("90m", dt.timedelta(minutes=90)),
    ("36h", dt.timedelta(hours=36)), ("30s", dt.timedelta(seconds=30))])
def test_a_dedup_window_that_is_not_whole_days_is_an_event_time_window(
        tmp_path: Path, value: str, window: dt.timedelta) -> None:
    # No event_date partition needed: the window prunes by the time field's statistics.
    target = {**BASE["target"], "dedup_window": value, "partition_by": []}  # type: ignore[dict-item]
    cfg = load_config(write(tmp_path, {**BASE, "target": target}), environ={})
    assert (cfg.target.time_window, cfg.target.date_window) == (window, 0)


@pytest.mark.parametrize(("target", "message"), [
    ({"dedup_window": "1.5s"}, "whole seconds"),
    ({"dedup_window": "-1d"}, "not a duration"),
    ({"dedup_window": "9000h"}, "less than or equal to 366"),
    ({"dedup_window": "1h", "mode": "upsert"}, "does not apply"),
    ({"dedup_window": "1d", "mode": "upsert"}, "leave dedup_window out"),
    ({"dedup_window": "400d"}, "less than or equal to 366"),
    ({"dedup_window": "2d", "partition_by": []}, "target.dedup_window needs 'event_date'"),
])
def test_bad_dedup_window_fails_clearly(tmp_path: Path, target: dict[str, object],
                                        message: str) -> None:
    data = {**BASE, "target": {**BASE["target"], **target}}  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match=r"target\.dedup_window") as err:
        load_config(write(tmp_path, data), environ={})
    assert message in str(err.value)


def test_defaults_resolve_like_values_written_in_the_file(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory must not matter
    folder = tmp_path / "conf"
    folder.mkdir()
    cfg = load_config(write(folder, BASE), environ={})
    assert cfg.quality.docs_dir == str(folder / "lake" / "_quality" / "docs")
    assert cfg.quality.results_ref.path == str(folder / "lake" / "_quality" / "results")
    assert cfg.quality.metrics_ref.path == str(folder / "lake" / "_quality" / "run_metrics")
    assert cfg.target.quarantine_ref.path == str(folder / "lake" / "orders_quarantine")


def test_a_table_replaces_the_default_path_and_a_null_section_means_defaults(
        tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, {**BASE, "quality": {"results_table": "db.results"}}),
                      environ={})
    assert cfg.quality.results_ref.name == "db.results"
    assert cfg.quality.metrics_ref.path == str(tmp_path / "lake" / "_quality" / "run_metrics")
    assert load_config(write(tmp_path, {**BASE, "quality": None, "spark": None}),
                       environ={}).spark.master == "local[2]"
    with pytest.raises(ConfigError, match=r"set quality.results_path or quality.results_table"):
        load_config(write(tmp_path, {**BASE, "quality": {"results_path": None}}), environ={})
