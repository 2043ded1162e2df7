"""Bad inputs nobody tried (issue 33 §3): each fails in one line with a documented exit code, or
lands exactly once.

The cheap ones live here: no JVM of their own (a ``deltasink`` process that fails before it
would start one, or ``pipelines.cli.main`` in-process). The long ones (a Connect server or a
broker killed mid-run, signals, a full disk) are under ``tests/chaos``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.formats.avro import AvroDecoder, WriterSchemas
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.sink.parse import classify
from schemas import get_schema
from schemas.loader import schema_from_mapping
from tests.support import runner
from tests.support.checker import check
from tests.support.clicks import DECLARED, V1, click, wire
from tests.support.configs import write_config

#: A guard against a hang, not a speed threshold: the old behaviour was silence for 10 minutes.
HANG = 120.0


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def deltasink_run(config: Path, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """``deltasink run`` as a process; fails the test with "hung" if it does not end."""
    try:
        return runner.run(config, timeout=HANG, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"deltasink run hung: no exit within {HANG:.0f}s")


def test_a_closed_spark_remote_port_fails_at_once_in_one_line_naming_it(tmp_path: Path) -> None:
    """``spark.remote`` at a port nothing listens on: one line naming ``spark.remote`` and what
    is wrong, exit code 1 (an environment failure), and nothing written. Before issue 33 the run
    printed nothing and retried for 10 minutes."""
    url = f"sc://127.0.0.1:{closed_port()}"
    config = write_config(tmp_path, "127.0.0.1:9", "orders", spark={"remote": url})

    done = deltasink_run(config)

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        f"error: spark.remote {url}: cannot reach the Spark Connect server (connection refused: "
        "nothing listens on that port). Is it running? (`deltasink connect-server` starts one "
        "here)\n"), done.stderr
    assert not (tmp_path / "orders").exists() and not (tmp_path / "_checkpoints").exists()


@pytest.mark.parametrize("where", ["config", "SPARK_REMOTE"])
def test_a_spark_remote_that_is_not_an_sc_url_is_bad_config(tmp_path: Path, where: str) -> None:
    """A wrong scheme, in the config or in ``SPARK_REMOTE``: exit code 2, one line that names
    ``spark.remote`` and the expected form."""
    bad = "http://127.0.0.1:15002"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    if where == "config":
        config = write_config(tmp_path, "127.0.0.1:9", "orders", spark={"remote": bad})
    else:
        config = write_config(tmp_path, "127.0.0.1:9", "orders")
        env["SPARK_REMOTE"] = bad

    done = deltasink_run(config, env=env)

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") <= 2 and "Traceback" not in done.stderr, done.stderr
    assert "spark.remote" in done.stderr and "sc://127.0.0.1:15002" in done.stderr, done.stderr
    assert not (tmp_path / "orders").exists()


@contextmanager
def immutable(folder: Path) -> Iterator[None]:
    """Make ``folder`` unwritable even for root, for the duration of the block.

    The tests run as root, which ignores mode bits (``chmod 555`` would prove nothing), so this
    uses the ext4 immutable attribute (``chattr +i``): nothing can be created, renamed or
    deleted in the folder, by root either (``EPERM``), and ``os.access`` says so. Running the
    check as ``nobody`` (``setpriv``) was the other way; it needs a JVM that user can start, and
    a second process. Skipped where ``chattr`` does not work (another filesystem, not root).
    """
    attempt = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True,
                             check=False)
    if attempt.returncode != 0:
        pytest.skip(f"chattr +i does not work here: {attempt.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_new_table_below_an_unwritable_folder_is_refused_in_one_line(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The quarantine's parent folder refuses writes: exit 2, one line naming
    ``target.quarantine_path``, and neither table nor checkpoint offsets created."""
    topic = f"denied-new-{uuid.uuid4().hex[:8]}"
    produce_events(broker.bootstrap_servers, topic, 5, seed=13)
    locked = lake / "locked"
    locked.mkdir()
    quarantine = locked / "orders_quarantine"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        target={"quarantine_path": str(quarantine)})

    with immutable(locked):
        code = main(["run", "--config", str(path), "--no-validate"])
    err = capsys.readouterr().err

    assert code == 2, err
    assert err == (f"error: target.quarantine_path {quarantine} cannot be created: {locked} is "
                   "not writable. Fix its permissions or point target.quarantine_path "
                   "elsewhere.\n"), err
    assert not (lake / "orders").exists() and not quarantine.exists()
    assert not (lake / "_checkpoints" / "orders_bronze" / "offsets").exists()


def listing(*folders: Path) -> list[list[str]]:
    """The names in each folder, sorted: to show that a refused run wrote nothing."""
    return [sorted(p.name for p in folder.iterdir()) for folder in folders]


@pytest.mark.extended
def test_bad_locations_and_damaged_state_each_stop_in_one_line_and_a_later_run_lands_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One pipeline, landed once; then, one at a time, each bad input below is given to
    ``deltasink run`` (``main()`` in this process, on the session's Spark). Each exits with its
    documented code and one line naming the setting or file, and writes nothing: no table
    version, data file, or checkpoint offset or commit. Each is then put right, and a last run
    lands every event exactly once. (One pipeline for all: two streaming runs in all, not two
    per case; ``make test``'s budget.)

    * ``target.quarantine_path`` at ``target.path``: spelled the same, through a symbolic link,
      or a folder inside it (a VACUUM of the target would empty it): exit 2, before reading.
    * The checkpoint's ``metadata`` (the query id: without the check Spark would make up a new
      one), its newest ``commits/<n>`` or its newest ``offsets/<n>`` cut short, as a crash or
      a full disk leaves them: exit 1, "is damaged", and what to do.
    * The target's ``_delta_log`` refusing writes (permission denied: ``chattr +i``, see
      :func:`immutable`): exit 2, before reading.
    * The target's newest ``_delta_log`` entry cut short. This cannot be made safe (the entry
      may hold a batch whose offsets the checkpoint already passed), so it is only detected:
      exit 1, one line naming the table's log. Put back (as from a backup), the run resumes.
    """
    topic = f"bad-state-{uuid.uuid4().hex[:8]}"
    first = produce_events(broker.bootstrap_servers, topic, 40, poison_rate=0.1, seed=17)
    # Two batches, so the damaged offsets file below is the newest of several; the last run
    # lands everything in one (the config is written again before it).
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 25})
    cfg = load_config(path, environ={})
    assert main(["run", "--config", str(path), "--no-validate"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    more = produce_events(broker.bootstrap_servers, topic, 20, poison_rate=0.1, seed=18,
                          id_prefix="more")
    target, root = Path(cfg.target.path), Path(cfg.checkpoint)
    watched = (target, target / "_delta_log", Path(cfg.target.quarantine_path) / "_delta_log",
               root / "offsets", root / "commits")
    before = listing(*watched)

    def refused(config: Path, case: str) -> tuple[int, str]:
        code = main(["run", "--config", str(config), "--no-validate"])
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, (case, err)
        assert listing(*watched) == before, f"{case}: the refused run wrote past the check"
        return code, err

    # Damaged checkpoint files: named, with what to do.
    commits = max((root / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    offsets = max((root / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    for case, file in [("metadata", root / "metadata"), ("commits", commits),
                       ("offsets", offsets)]:
        good = file.read_bytes()
        file.write_bytes(good[:7])
        code, err = refused(path, case)
        file.write_bytes(good)  # its .crc matches again
        assert code == 1, (case, err)
        assert err == (f"error: checkpoint {root} is damaged: {file} is truncated or "
                       f"unreadable. Delete the folder {root} and run again: deltasink resumes "
                       "from the offsets recorded in the target table, losing and duplicating "
                       "nothing.\n"), (case, err)

    # A damaged log entry: detected and named, never written past.
    newest = max(target.glob("_delta_log/*.json"), key=lambda p: int(p.stem))
    good = newest.read_bytes()
    newest.write_bytes(good[: len(good) // 2])
    code, err = refused(path, "damaged _delta_log entry")
    newest.write_bytes(good)
    assert code == 1, err
    assert str(target) in err and "_delta_log" in err, err

    # The refusals at preflight come last. (A run refused there once left this process's next
    # run refused as "already running" for 60 s; a lease row of this very process is now live
    # only while a run of it holds the token: pipelines/ledger/lease.py.)
    # Permission denied on the target's log.
    with immutable(target / "_delta_log"):
        code, err = refused(path, "unwritable _delta_log")
    assert code == 2, err
    assert err == (f"error: target.path {target}: its _delta_log folder is not writable. Fix "
                   "its permissions or point target.path elsewhere.\n"), err

    # The quarantine at the target: three spellings.
    (lake / "link").symlink_to(target, target_is_directory=True)
    for case, quarantine in [("same", target), ("symlink", lake / "link"),
                             ("nested", target / "quarantine")]:
        bad = write_config(lake, broker.bootstrap_servers, topic, name="orders_bronze",
                           target={"quarantine_path": str(quarantine)})
        code, err = refused(bad, case)
        assert code == 2, (case, err)
        if case == "nested":
            assert err == (f"error: target.quarantine_path {quarantine} is inside target.path "
                           f"{target}: a VACUUM of that table would delete its files; give each "
                           "its own folder.\n"), err
        else:
            assert err == (f"error: target.path and target.quarantine_path are the same "
                           f"location ({quarantine}); give each its own folder.\n"), (case, err)
    path = write_config(lake, broker.bootstrap_servers, topic)

    # Put right, with the checkpoint deleted as the damaged-checkpoint line says: all once.
    shutil.rmtree(root)
    assert main(["run", "--config", str(path), "--no-validate"]) == 0, capsys.readouterr().err
    verdict = check(spark, cfg, [*first.event_ids, *more.event_ids],
                    sum(first.poison.values()) + sum(more.poison.values()))
    assert verdict.clean, verdict


EVENT = b'"event_type":"t","event_time":"2026-03-01T00:00:00Z"'
ODD_JSON: list[tuple[str, bytes, str | None]] = [
    ("duplicate key", b'{"event_id":"a","event_id":"b",' + EVENT + b"}", "invalid_json"),
    ("duplicate nested key", b'{"event_id":"d",' + EVENT + b',"payload":{"a":1,"a":2}}',
     "invalid_json"),
    ("NaN", b'{"event_id":"n",' + EVENT + b',"payload":{"x":NaN}}', "invalid_json"),
    ("Infinity", b'{"event_id":"i",' + EVENT + b',"payload":{"x":Infinity}}', "invalid_json"),
    ("-Infinity", b'{"event_id":"m",' + EVENT + b',"payload":{"x":-Infinity}}', "invalid_json"),
    ("byte order mark", b'\xef\xbb\xbf{"event_id":"bom",' + EVENT + b"}", None),
    ("byte order mark, then a list", b"\xef\xbb\xbf[1]", "not_an_object"),
]


def kafka_frame(spark: SparkSession, rows: list[tuple[bytes | None, bytes | None,
                                                      list[tuple[str, bytes]]]]) -> DataFrame:
    """Kafka source rows (key, value, headers) on partition 0, offsets 0.."""
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    return spark.createDataFrame(
        [(key, value, "t", 0, i, now, 0, headers) for i, (key, value, headers) in
         enumerate(rows)],
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>")


def test_odd_json_lands_or_is_quarantined_with_its_reason(spark: SparkSession) -> None:
    """Duplicate keys, NaN and Infinity are ``invalid_json`` (quarantined with the raw bytes);
    a UTF-8 byte order mark is skipped and the event lands (see ``pipelines/sink/parse.py``)."""
    frame = kafka_frame(spark, [(None, value, []) for _, value, _ in ODD_JSON])

    rows = classify(frame, get_schema("events_v1"), 10_000).orderBy("kafka_offset").collect()

    got = {name: row["_reason"] for (name, _, _), row in zip(ODD_JSON, rows, strict=True)}
    assert got == {name: reason for name, _, reason in ODD_JSON}
    bom = rows[[name for name, _, _ in ODD_JSON].index("byte order mark")]
    assert bom["event_id"] == "bom" and bom["raw_value"].startswith(b"\xef\xbb\xbf")


def test_a_key_or_kept_header_that_is_not_utf8_is_quarantined_not_mangled(
        spark: SparkSession) -> None:
    """A schema keyed on ``kafka.key`` that keeps a header as a column: a non-UTF-8 key is
    ``invalid_utf8:kafka.key``, a non-UTF-8 kept header ``invalid_utf8:<column>``; a non-UTF-8
    header the schema does not keep changes nothing."""
    schema = schema_from_mapping({
        "name": "keyed", "key": "kafka.key", "event_time": "kafka.timestamp",
        "fields": {"v": {"type": "long", "required": False}},
        "headers": {"trace": "trace-id"}})
    frame = kafka_frame(spark, [
        (b"\xff\xfe", b'{"v": 1}', [("trace-id", b"ok")]),
        (b"k1", b'{"v": 2}', [("trace-id", b"\xc3\x28")]),
        (b"k2", b'{"v": 3}', [("trace-id", b"fine"), ("other", b"\xff")]),
    ])

    rows = classify(frame, schema, 10_000).orderBy("kafka_offset").collect()

    assert [r["_reason"] for r in rows] == ["invalid_utf8:kafka.key", "invalid_utf8:trace", None]
    assert rows[2]["trace"] == "fine" and rows[2]["v"] == 3


def _click_writer(**types: object) -> str:
    """The ``Click`` writer schema with some fields' types replaced (None: field dropped)."""
    fields = [{"name": f["name"], "type": types.get(f["name"], f["type"])}
              for f in json.loads(V1)["fields"] if types.get(f["name"], f["type"]) is not None]
    return json.dumps({"type": "record", "name": "Click", "namespace": "test", "fields": fields})


def test_an_avro_writer_schema_that_conflicts_with_the_declared_one_is_quarantined_per_field(
        spark: SparkSession) -> None:
    """Writer schemas the declared (YAML) schema cannot take: ``amount`` written as a string,
    ``user`` as a number, or ``user`` missing. Every record of such a writer is quarantined
    with the field and the kind of conflict (``bad_type:<f>``, ``missing:<f>``) and its raw
    bytes, so a redrive after the declared schema is fixed lands it; nothing is landed with a
    coerced value, and a compatible writer's records in the same batch still land."""
    by_id = {1: V1, 4: _click_writer(amount="string"), 5: _click_writer(user="long"),
             6: _click_writer(user=None)}
    record = click(1)
    values = [wire(1, V1, record),
              wire(4, by_id[4], {**record, "event_id": "c-4", "amount": "0.25"}),
              wire(5, by_id[5], {**record, "event_id": "c-5", "user": 7}),
              wire(6, by_id[6], {k: v for k, v in record.items() if k != "user"}
                   | {"event_id": "c-6"})]
    frame = kafka_frame(spark, [(None, v, []) for v in values])

    decoder = AvroDecoder(WriterSchemas(by_id=by_id))
    rows = classify(frame, schema_from_mapping(DECLARED), 10_000,
                    decoder=decoder).orderBy("kafka_offset").collect()

    assert [r["_reason"] for r in rows] == [
        None, "bad_type:amount", "bad_type:user", "missing:user"], [tuple(r) for r in rows]
    assert all(r["raw_value"] == v for r, v in zip(rows, values, strict=True))
