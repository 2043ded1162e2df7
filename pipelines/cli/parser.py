"""The ``deltasink`` command: parses arguments and calls one function per subcommand."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from pipelines import __version__
from pipelines.cli.commands import (
    cmd_broker,
    cmd_connect_server,
    cmd_demo,
    cmd_init,
    cmd_produce,
    cmd_quarantine,
    cmd_replay,
    cmd_report,
    cmd_rewind,
    cmd_run,
    cmd_status,
    cmd_validate,
)
from pipelines.cli.failures import broken_by_stop, classify, report_failure
from pipelines.cli.group import GROUP_DIR
from pipelines.cli.setup import TEXT as SETUP_TEXT
from pipelines.cli.setup import add_arguments as add_setup_arguments
from pipelines.cli.setup import cmd_setup
from pipelines.cli.stops import stop_on_signals, stopped_line
from pipelines.runtime.signals import SIGNALS

EPILOG = """\
exit codes: 0 success, 1 failure, 2 bad config or usage, 3 a data-quality check failed,
130 interrupted (SIGINT, Ctrl-C), 143 terminated (SIGTERM).
stop: SIGINT or SIGTERM to deltasink alone or to its whole process group (a terminal's Ctrl-C,
kill -TERM -<pgid>, systemd, a job cancel) stops the stream, and the command ends with one
line on stderr, e.g. "terminated (SIGTERM): stopped; the next run continues where this one
stopped", and 130 or 143; a continuous run stopped so exits 0. The next run lands every event
once, a batch the stop cut included. The local driver JVM ignores both signals and exits with
deltasink.
errors are one line (no traceback); --debug prints the traceback too.
a group run (run with several --config, or --all) prints one line per pipeline and exits with
the worst of their codes: 2 over 1 over 3 over 0.
config: a YAML file (`deltasink init` writes one; every key: the docs' configuration reference);
DELTASINK_<SECTION>__<KEY> environment variables override keys, e.g.
DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG for a secret Kafka option. DELTASINK_SPARK_LOG,
DELTASINK_M2, ... are process settings (the docs' environment variables reference).
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also rendered as the docs' CLI reference, pipelines/reference)."""
    parser = argparse.ArgumentParser(
        prog="deltasink", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Land Kafka event streams in Delta Lake exactly once: parse, quarantine bad "
                    "records, deduplicate on the event id, insert-only MERGE, idempotent commits.")
    parser.add_argument("--version", action="version", version=f"deltasink {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, print the traceback too (also after COMMAND)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], text: str,
            config: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if config:
            p.add_argument("--config", "-c", required=True, metavar="FILE",
                           help="the pipeline's YAML config")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, print the traceback too")
        p.set_defaults(func=func)
        return p

    p = add("init", cmd_init, "write a commented starter config for a topic (never overwrites)",
            config=False)
    p.add_argument("--topic", required=True, help="the Kafka topic to land")
    p.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT",
                   help="Kafka bootstrap servers (HOST:PORT[,HOST:PORT])")
    p.add_argument("--target", required=True, metavar="PATH|TABLE",
                   help="target table: a folder or URI (relative: to this directory), or "
                        "catalog.schema.table")
    p.add_argument("--out", metavar="FILE", help="the config file to write (default <name>.yml)")
    p.add_argument("--name", help="pipeline name (default: the topic)")
    p.add_argument("--checkpoint", metavar="PATH",
                   help="default: _checkpoints/<name> next to the target folder")
    add_setup_arguments(add("setup", cmd_setup, SETUP_TEXT, config=False))
    p = add("broker", cmd_broker, "start or stop the embedded Kafka broker (local development)",
            config=False)
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--port", type=int, help="listener port (default 9092, or the last used)")
    p.add_argument("--data-dir", help="where the broker keeps its data (default ./lake/_broker)")
    p = add("connect-server", cmd_connect_server, "run Spark's own Spark Connect server here "
            "(local development): pipelines with spark.remote run through it", config=False)
    p.add_argument("--port", type=int, default=15002, help="gRPC port (default 15002)")
    p.add_argument("--master", default="local[2]", help="the server's Spark master")
    p.add_argument("--log", metavar="FILE",
                   help="its output (default ~/.cache/deltasink/connect-server.log)")
    p = add("produce", cmd_produce, "send sample events, with duplicates and poison pills")
    p.add_argument("--count", type=int, required=True, help="distinct valid events to send")
    p.add_argument("--duplicate-rate", type=float, default=0.0, metavar="R",
                   help="extra copies of events, as a share of --count (0.1 = 10%%)")
    p.add_argument("--poison-rate", type=float, default=0.0, metavar="R",
                   help="unparseable records, as a share of --count, of every poison kind")
    p.add_argument("--legacy-rate", type=float, default=0.0, metavar="R",
                   help="extra events in an old producer's format (no event_type, "
                        "dd.MM.yyyy times), as a share of --count: events_v1 quarantines "
                        "them, events_v2 reads them")
    p.add_argument("--seed", type=int, default=0, help="same seed, same event ids (default 0)")
    p.add_argument("--topic", help="default: the first of source.topics")
    p.add_argument("--partitions", type=int, default=3, help="for a new topic (default 3)")
    p = add("run", cmd_run, "stream Kafka into the Delta target, then validate the result; "
            "several configs (or --all) run as one group in one Spark session", config=False)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--config", "-c", action="append", metavar="FILE",
                       help="the pipeline's YAML config; give it again to run several "
                            "pipelines as one group")
    which.add_argument("--all", nargs="?", const=GROUP_DIR, metavar="DIR",
                       help=f"run every *.yml config in DIR (default {GROUP_DIR}) as one group")
    p.add_argument("--parallel", type=int, default=2, metavar="N",
                   help="a group's streams that run at once (default 2)")
    p.add_argument("--trigger", choices=["available-now", "continuous"], default="available-now",
                   help="available-now: process what exists, then stop (scheduled jobs); "
                        "continuous: a micro-batch every --interval until stopped (Ctrl-C or "
                        "SIGTERM; then exit 0)")
    p.add_argument("--interval", default="10s", help="micro-batch interval for continuous")
    p.add_argument("--no-validate", action="store_true", help="skip post-run validation")
    p = add("status", cmd_status, "table version, txn ids, offsets, counts, Kafka lag, freshness")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = add("validate", cmd_validate, "run the data-quality suites on the target table")
    p.add_argument("--full", action="store_true",
                   help="check the whole table (default: the partitions the latest run wrote)")
    p = add("rewind", cmd_rewind, "restore the target and quarantine to an earlier version; the "
            "next run re-ingests from there")
    point = p.add_mutually_exclusive_group(required=True)
    point.add_argument("--to-version", type=int, metavar="V", help="a target table version")
    point.add_argument("--to-timestamp", metavar="T",
                       help="the target version current at this time (ISO 8601)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p = add("replay", cmd_replay, "backfill: re-read Kafka from a time into the same tables "
            "(adds only missing rows; the pipeline's offsets stay put)")
    p.add_argument("--from-timestamp", required=True, metavar="T",
                   help="first record time to re-read (ISO 8601, UTC unless it has a zone)")
    p.add_argument("--topics", metavar="T1,T2", help="only these topics (default: all)")
    p = add("quarantine", cmd_quarantine, "list quarantined records per reason, or redrive "
            "them: re-parse with the current schema, land what now parses exactly once")
    p.add_argument("action", choices=["list", "redrive"],
                   help="list: rows per reason, pending and redriven (changes nothing); "
                        "redrive: re-parse pending rows, MERGE those that parse into the "
                        "target, mark them redriven with the target version")
    p.add_argument("--reason", metavar="R",
                   help="only this reason, or this kind of reason (missing = missing:<any>)")
    p.add_argument("--since", metavar="T",
                   help="only rows quarantined at or after T (ISO 8601, UTC unless zoned)")
    p.add_argument("--dry-run", action="store_true",
                   help="redrive: print the plan per reason, change nothing")
    p = add("demo", cmd_demo, "the whole story locally: broker, duplicates, poison, a crash, "
            "exactly-once", config=False)
    p.add_argument("--dir", default="lake/demo", help="working folder, recreated (lake/demo)")
    p.add_argument("--port", type=int, default=9092, help="broker port (next free if taken)")
    p = add("report", cmd_report, "write the static data-quality dashboard (HTML)")
    p.add_argument("--out", metavar="FILE", help="default: next to quality.docs_dir")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``deltasink`` command.

    Every error becomes one line on stderr and an exit code (2 bad config, 1 failure, 3 data
    quality); ``--debug`` prints the traceback first. Secret values are masked. A stop signal
    (SIGINT, SIGTERM), to this process or to its whole process group, ends the command in one
    line too: 130 or 143, and 0 for a continuous run, whose normal end it is.
    """
    args = build_parser().parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    logging.basicConfig(level=logging.WARNING, format="deltasink: %(message)s")

    def fail(exc: BaseException, code: int, line: str) -> int:
        return report_failure(exc, code, line, debug=debug, known=getattr(args, "secrets", ()))

    if not debug:  # Py4J logs a traceback when a call breaks (a stop breaks one): the
        _quiet_py4j()  # exception it raises then says it in one line
    SIGNALS.clear()
    with stop_on_signals():
        code = _dispatch(args, fail, debug)
    if not SIGNALS:
        return code
    stopped = 128 + SIGNALS[0]
    if code == 0:  # the command stopped early and said so in its output: one line for it
        print(stopped_line(SIGNALS[0], args.command), file=sys.stderr, flush=True)
        code = stopped
    continuous = getattr(args, "trigger", None) == "continuous"
    return 0 if continuous and code == stopped else code


class _NotPy4J(logging.Filter):
    """Drops the records Py4J logs through the root logger (``logging.exception(...)``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "py4j" not in record.pathname


def _quiet_py4j() -> None:
    """Keep Py4J's own log records off stderr: those of its loggers (``py4j.clientserver``,
    ``py4j.java_gateway``: "Exception occurred while shutting down connection", with a
    traceback, when a stop breaks a call or the gateway closes) and those it logs through the
    root logger. For the whole process, its exit included, when Py4J's threads close."""
    logging.getLogger("py4j").propagate = False
    root = logging.getLogger()
    if not any(isinstance(f, _NotPy4J) for f in root.filters):
        root.addFilter(_NotPy4J())


def _dispatch(args: argparse.Namespace, fail: Callable[[BaseException, int, str], int],
              debug: bool) -> int:
    """Run the command; every exception becomes one line and an exit code. After a stop signal,
    a failure it caused (a Spark call it broke) is the interrupt: 128 + the signal."""
    try:
        return int(args.func(args))
    except (Exception, KeyboardInterrupt) as exc:
        if broken_by_stop(exc, SIGNALS):
            return fail(exc, 128 + SIGNALS[0], stopped_line(SIGNALS[0], args.command))
        return _one_line(exc, fail, debug)


def _one_line(exc: BaseException, fail: Callable[[BaseException, int, str], int],
              debug: bool) -> int:
    code, line = classify(exc, debug)  # Kafka, OSError, Py4J, Spark, a bug: one line too
    return fail(exc, code, line)


if __name__ == "__main__":
    sys.exit(main())
