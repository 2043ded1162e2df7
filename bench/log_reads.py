"""``python -m bench.log_reads``: a batch's read of the target's log, against the log's length.

Issue 46 asks that a continuous run's batch cost stay flat for weeks. Each batch reads the
newest commit files of the target's ``_delta_log`` by name (``DeltaLogFiles.near``, for the
RESTORE check), and that log grows by about four files per commit on a local disk (two on S3)
until ``delta.logRetentionDuration`` (30 days) removes old ones: at a 5 s trigger, ~69,000
files a day.

This times that read in folders of ``--sizes`` commit-named files, in one session, medians of
``--rounds`` after a warm-up, two ways:

- **by name**: the pattern deltasink builds (``pipelines.storage.store.named``): the folder's
  name inside the braces, so Hadoop looks each name up by itself;
- **bare braces**: ``folder/{a,b,...}``, which it built before: Hadoop lists the folder and
  matches every entry.

Both read the same names (the newest four versions and the ``NEAR - 1`` after them, which do
not exist) and must return the same files. Writes ``bench/results/log_reads.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run import RESULTS, say
from pipelines.ledger.deltalog import NEAR
from pipelines.runtime.spark import get_spark
from pipelines.storage.store import Store, named


def _read(store: Store, pattern: str) -> list[str]:
    rows = store._rows([pattern], content=True)  # the read read_many makes, for either pattern
    return sorted(r.path.rpartition("/")[2] for r in rows)


def _time(store: Store, pattern: str, rounds: int) -> tuple[float, list[str]]:
    got = _read(store, pattern)  # warm-up
    times = []
    for _ in range(rounds):
        start = time.monotonic()
        _read(store, pattern)
        times.append(time.monotonic() - start)
    return statistics.median(times), got


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.log_reads", description=__doc__)
    parser.add_argument("--sizes", default="100,20000,100000",
                        help="files in the folder, comma-separated (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    store = Store(get_spark("bench-log-reads"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-log-reads-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"t{size}" / "_delta_log"
            folder.mkdir(parents=True)
            for version in range(size):
                (folder / f"{version:020d}.json").write_text("{}\n")
            names = [f"{v:020d}.json" for v in range(size - 4, size + NEAR - 1)]
            new, got_new = _time(store, named(str(folder), names), args.rounds)
            old, got_old = _time(store, f"{folder}/{{{','.join(names)}}}", args.rounds)
            if got_new != got_old or len(got_new) != 4:
                raise SystemExit(f"the two reads differ at {size} files: {got_new} / {got_old}")
            rows.append({"files": size, "by_name_s": round(new, 3), "bare_braces_s": round(old, 3)})
            say(f"{size:,} files: by name {new:.3f} s, bare braces {old:.3f} s")
    lines = ["# A batch's read of the log by name, against the log's length", "",
             f"`python -m bench.log_reads`, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: "
             f"{4 + NEAR - 1} names (4 that exist), one session, median of {args.rounds}.", "",
             "| files in `_delta_log` | by name (each looked up) | bare braces (folder listed) |",
             "|---|---|---|"]
    lines += [f"| {r['files']:,} | {r['by_name_s']} s | {r['bare_braces_s']} s |" for r in rows]
    (RESULTS / "log_reads.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "log_reads.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
