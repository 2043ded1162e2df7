"""The `deltasink` command as a user meets it: real processes, any working directory, and every
error as one line with an exit code."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import failures, main
from pipelines.config import env
from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.kafka.produce import produce_events
from pipelines.runtime import jvm
from pipelines.runtime.phases import parse_line
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import make_config

SECRET = 's3cr3t-Pa55word'
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="alice" password="{SECRET}";')


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return lines[0]


def test_the_whole_cli_from_a_minimal_config_in_another_directory(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """init, run (with its validation), status, report from a config holding only the required
    keys, run from an unrelated working directory with every process setting set (an empty
    deltasink cache among them: S3A's jars are not there, and this pipeline does not need them).

    ``init`` and ``run`` are real processes (the suite's one end-to-end CLI run, cold JVM
    included); ``status`` and ``report`` call the same ``main()`` in this process, from the same
    directory and environment, on the session's SparkSession. The run validates what it landed
    (the whole table: it is the table's only run) and prints the verdict. A separate ``validate
    --full`` here re-ran the same suite on the same rows, for 44 s of this test's 159 (Great
    Expectations imported into this process, then the suite on interpreted Spark); the
    ``validate`` command runs, as a process, in test_connect_run.py.
    """
    conf, work = tmp_path / "conf", tmp_path / "work"
    work.mkdir()
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    driver_log = tmp_path / "logs" / "driver.log"
    settings = {env.SPARK_LOG: str(driver_log), env.SPARK_LOG_LEVEL: "WARN",
                env.M2: str(jvm.m2_repository()), env.JVM_CACHE: str(tmp_path / "cache"),
                env.CHAOS_SEED: "7", "DELTASINK_NOT_A_SETTING": "x"}
    environ = {**os.environ, **settings}
    fault = "before_target_commit@999999"  # DELTASINK_FAULT set, at a batch that never comes

    def cli_run(*args: str) -> subprocess.CompletedProcess[str]:
        done = runner.deltasink(*args, env=environ, fault=fault, cwd=work, timeout=600,
                                codegen=True)  # Spark's default, as users run it
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        return done

    def cli_main(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err[-3000:]
        return code, out, err

    made = cli_run("init", "--topic", topic, "--bootstrap-servers", broker.bootstrap_servers,
                   "--target", "../conf/lake/orders", "--out", "../conf/orders.yml")
    assert made.returncode == 0, made.stderr
    config_file = conf / "orders.yml"
    assert "path: ./lake/orders" in config_file.read_text()
    sent = produce_events(broker.bootstrap_servers, topic, 400, duplicate_rate=0.1,
                          poison_rate=0.005, seed=11)  # 2 poison pills: under the 1% bound

    ran = cli_run("run", "--config", "../conf/orders.yml")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "inserted=400" in ran.stdout and "quality PASSED" in ran.stdout
    timings = parse_line(ran.stdout.strip().splitlines()[-1])  # the run ends with its phases
    assert {"spark", "preflight", "stream", "validate", "total"} <= set(timings), timings
    assert "ignoring environment variable DELTASINK_NOT_A_SETTING" in ran.stderr
    assert driver_log.stat().st_size > 0  # DELTASINK_SPARK_LOG was honoured
    # An empty deltasink cache (DELTASINK_JVM_CACHE): no S3A classpath fetched, and a pipeline
    # that is not on S3 is neither refused for it nor fetches it.
    assert not (tmp_path / "cache" / "s3").exists()

    monkeypatch.chdir(work)
    for key, value in {**settings, env.FAULT: fault}.items():
        monkeypatch.setenv(key, value)
    code, out, err = cli_main("status", "--config", "../conf/orders.yml", "--json")
    assert code == 0, err[-2000:]
    state = json.loads(out)
    assert state["target_rows"] == 400 and state["quarantine_rows"] == 2 and state["in_sync"]
    code, out, err = cli_main("report", "--config", "../conf/orders.yml")
    assert code == 0, err[-2000:]

    # Everything landed next to the config file, defaults included; nothing in the cwd's lake.
    lake = conf / "lake"
    for table in ("orders", "orders_quarantine", "_quality/results", "_quality/run_metrics"):
        assert (lake / table / "_delta_log").is_dir(), f"{table} is not a Delta table"
    assert (lake / "_quality" / "docs" / "index.html").is_file()
    assert (lake / "_quality" / "dashboard.html").is_file()
    assert (lake / "_checkpoints" / topic / "commits").is_dir()  # the name is the topic
    assert not (work / "lake").exists()
    verdict = check(spark, load_config(config_file, environ={}), sent.event_ids, 2)
    assert verdict.clean, verdict


@pytest.mark.slow
def test_a_kafka_error_is_one_line_without_secrets_and_debug_shows_the_traceback(
        tmp_path: Path) -> None:
    cfg = tmp_path / "orders.yml"
    cfg.write_text(f"name: orders\nsource:\n  bootstrap_servers: 127.0.0.1:{free_port_pair()}\n"
                   "  topics: [orders]\ntarget:\n  path: ./lake/orders\n"
                   "checkpoint: ./lake/_checkpoints/orders\n")
    environ = {**os.environ, "DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": JAAS}
    done = runner.deltasink("produce", "--config", str(cfg), "--count", "1", env=environ,
                            timeout=120)
    assert done.returncode == 1
    line = one_line_error(done)
    assert line.startswith("error: Kafka: ") and "run with --debug" in line
    assert SECRET not in done.stderr + done.stdout
    debug = runner.deltasink("produce", "--config", str(cfg), "--count", "1", "--debug",
                             env=environ, timeout=120)
    assert debug.returncode == 1
    assert "Traceback (most recent call last)" in debug.stderr and SECRET not in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1].startswith("error: Kafka: ")


def test_an_os_error_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    args = ("init", "--topic", "t", "--bootstrap-servers", "b:9092", "--target", "/t",
            "--out", str(blocker / "t.yml"))
    done = runner.deltasink(*args, timeout=60)
    assert done.returncode == 1
    line = one_line_error(done)
    assert line.startswith("error: FileExistsError: ") or line.startswith(
        "error: NotADirectoryError: "), line
    debug = runner.deltasink("--debug", *args, timeout=60)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr


def test_an_unwritable_spark_log_is_an_environment_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cfg = make_config(tmp_path, "127.0.0.1:9", "orders")
    done = runner.deltasink("status", "--config", str(cfg.config_file), timeout=120,
                            env={**os.environ, env.SPARK_LOG: str(blocker / "x.log")})
    assert done.returncode == 1
    assert one_line_error(done).startswith(
        f"error: cannot write the Spark driver log {blocker / 'x.log'}")


class Py4JJavaError(Exception):
    """Stands in for py4j.protocol.Py4JJavaError (whose str() needs a live JVM)."""

    __module__ = "py4j.protocol"


def test_failures_are_described_in_one_line_with_secrets_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    java = Py4JJavaError("An error occurred while calling o42.save.\n"
                         ": java.io.IOException: Mkdirs failed to create /x\n\tat org.apache...")
    assert failures.describe_failure(java) == \
        "Spark JVM: java.io.IOException: Mkdirs failed to create /x"
    assert failures.describe_failure(OSError(28, "No space left on device")) == \
        "OSError: [Errno 28] No space left on device"
    monkeypatch.setenv("DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG", JAAS)
    masked = failures.redact(f"auth failed for alice with {SECRET} (config {JAAS})")
    assert SECRET not in masked and "alice" not in masked


def test_the_debug_traceback_is_masked_too(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG", JAAS)
    try:
        raise RuntimeError(f"login failed: password={SECRET}")
    except RuntimeError as exc:
        assert failures.report_failure(exc, 1, f"error: {failures.describe_failure(exc)}",
                                       debug=True) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "password=***" in err
    assert SECRET not in err


def test_mechanism_and_protocol_stay_readable_while_credentials_are_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTASINK_SOURCE__OPTIONS__SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG", JAAS)
    known = failures.secret_values({"security.protocol": "SASL_SSL",
                                    "ssl.truststore.password": "trust-me-1"},
                                   {"spark.executor.memory": "4g-secretish"})
    assert known == {"trust-me-1", "4g-secretish"}
    line = failures.redact("SASL_SSL: invalid credentials with SASL mechanism SCRAM-SHA-512 "
                           f"for {SECRET}, store trust-me-1", known)
    assert line == ("SASL_SSL: invalid credentials with SASL mechanism SCRAM-SHA-512 "
                    "for ***, store ***")
