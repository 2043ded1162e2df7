"""A disk that fills up during a run (issue 33 §3): one line, a documented exit code, and a
later run, with space again, lands every event exactly once.

The lake sits on a small tmpfs of its own, filled to the last byte once the run's first batch
has committed to the target: the next write of the run (a checkpoint offset, a data file, a
``_delta_log`` entry or its checksum, the lease) fails with ``ENOSPC``, wherever it falls.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from tests.support.checker import check
from tests.support.configs import write_config


@contextmanager
def small_disk(folder: Path, size: str = "64m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder`` for the block (root, as ``chattr +i`` is)."""
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                   check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until its filesystem has no byte left; return the file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 12, 1):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    return filler


class FillOnCommit(threading.Thread):
    """Fill the disk as soon as the target's log has a version newer than ``after``."""

    def __init__(self, log: Path, after: int) -> None:
        super().__init__(daemon=True)
        self.log, self.after = log, after
        self.done = threading.Event()
        self.stop = threading.Event()
        self.filler: Path | None = None

    def run(self) -> None:
        while not self.stop.wait(0.02):
            if any(int(p.stem) > self.after for p in self.log.glob("*.json")):
                self.filler = fill(self.log.parent.parent)
                self.done.set()
                return


@pytest.mark.extended
def test_a_disk_that_fills_during_a_run_stops_in_one_line_and_the_next_run_lands_once(
        spark: SparkSession, broker: EmbeddedBroker, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"full-disk-{uuid.uuid4().hex[:8]}"
    first = produce_events(broker.bootstrap_servers, topic, 40, poison_rate=0.1, seed=23)
    with small_disk(tmp_path / "disk") as lake:
        # The first run and the last land in one batch each: only the run the disk fills
        # under needs small batches (the batch size is the config file's, rewritten between).
        path = write_config(lake, broker.bootstrap_servers, topic)
        cfg = load_config(path, environ={})
        assert main(["run", "--config", str(path), "--no-validate"]) == 0, \
            capsys.readouterr().err
        capsys.readouterr()
        log = Path(cfg.target.path) / "_delta_log"
        newest = max(int(p.stem) for p in log.glob("*.json"))
        # Ten batches left: the disk fills after the first of them commits, well before the end.
        more = produce_events(broker.bootstrap_servers, topic, 200, poison_rate=0.1, seed=24,
                              id_prefix="more")
        assert write_config(lake, broker.bootstrap_servers, topic,
                            source={"max_records_per_batch": 20}) == path
        filling = FillOnCommit(log, newest)
        filling.start()
        try:
            code = main(["run", "--config", str(path), "--no-validate"])
        finally:
            filling.stop.set()
            filling.join()
        err = capsys.readouterr().err
        assert filling.done.is_set(), ("the run ended before the disk filled", err)
        assert code == 1, err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith("error: a disk the run writes to is full (No space left on "
                              "device)"), err

        assert filling.filler is not None
        filling.filler.unlink()  # space again
        assert write_config(lake, broker.bootstrap_servers, topic) == path  # one batch again
        assert main(["run", "--config", str(path), "--no-validate"]) == 0, \
            capsys.readouterr().err
        verdict = check(spark, cfg, [*first.event_ids, *more.event_ids],
                        sum(first.poison.values()) + sum(more.poison.values()))
        assert verdict.clean, verdict
