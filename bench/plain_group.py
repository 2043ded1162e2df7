"""The plain job of several topics: one process, one Kafka -> Delta append query per topic.

``python -m bench.plain_group BOOTSTRAP WORK MAX_PER_BATCH TOPIC [TOPIC ...]``: what a user
writes instead of a group run. Each topic's query (``bench/plain_append.py``'s) appends to
``WORK/<topic>/target`` with its checkpoint beside it; all start at once (``availableNow``) and
the process waits for every one.
"""

from __future__ import annotations

import sys

from bench.plain_append import run_appends


def main(argv: list[str]) -> int:
    """Run every topic's plain append once, concurrently; return 0."""
    bootstrap, work, per_batch, *topics = argv
    return run_appends("plain-group", bootstrap, per_batch,
                       [(t, f"{work}/{t}/target", f"{work}/{t}/checkpoint") for t in topics])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
