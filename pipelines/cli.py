"""The ``deltasink`` command: parses arguments and calls one function per subcommand."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pipelines import __version__
from pipelines.errors import ConfigError, DeltasinkError, QualityError, SchemaError

EPILOG = """\
exit codes: 0 success, 1 failure, 2 bad config or usage, 3 a data-quality check failed.
config: a YAML file (see README); DELTASINK_<SECTION>__<KEY> environment variables override keys,
e.g. DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG for a secret Kafka option.
"""


def _say(line: str) -> None:
    print(line, flush=True)


def _config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pipelines.config.loader import load_config

    return load_config(args.config)


def cmd_setup(args: argparse.Namespace) -> int:
    from pipelines.runtime import jvm
    from pipelines.runtime.spark import get_spark

    for line in jvm.fetch():
        _say(line)
    spark = get_spark("deltasink-setup")  # resolves the packages once, filling Ivy's cache
    spark.range(1).count()
    spark.stop()
    _say("spark session with Delta and the Kafka connector: ok (jars cached)")
    return 0


def cmd_broker(args: argparse.Namespace) -> int:
    from pipelines.kafka.broker import DEFAULT_DATA_DIR, EmbeddedBroker

    node = EmbeddedBroker.at(args.data_dir or DEFAULT_DATA_DIR, args.port)
    if args.action == "start":
        node.start()
        _say(f"kafka broker running at {node.bootstrap_servers} (pid {node.pid}, data in "
             f"{node.data_dir})")
    elif args.action == "stop":
        stopped = node.stop()
        _say("kafka broker stopped" if stopped else f"no broker running for {node.data_dir}")
    else:
        _say(f"running at {node.bootstrap_servers} (pid {node.pid})" if node.pid
             else f"not running ({node.data_dir})")
    return 0


def cmd_produce(args: argparse.Namespace) -> int:
    from pipelines.kafka.produce import produce_events

    config = _config(args)
    topic = args.topic or (config.source.topics[0] if config.source.topics else None)
    if not topic:
        raise ConfigError("source uses topic_pattern; pass --topic to choose where to produce")
    summary = produce_events(config.source.bootstrap_servers, topic, args.count,
                             duplicate_rate=args.duplicate_rate, poison_rate=args.poison_rate,
                             seed=args.seed, partitions=args.partitions, progress=_say)
    _say(summary.describe())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from pipelines.run import run_pipeline
    from pipelines.runtime.spark import spark_for

    config = _config(args)
    run_pipeline(spark_for(config), config, trigger=args.trigger, interval=args.interval,
                 validate=not args.no_validate, progress=_say)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from pipelines.ops.status import collect_status, format_status
    from pipelines.runtime.spark import spark_for

    config = _config(args)
    status = collect_status(spark_for(config), config)
    if args.json:
        _say(json.dumps(status, indent=2, default=str))
    else:
        for line in format_status(status):
            _say(line)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from pipelines.runtime.spark import spark_for
    from quality.results import latest_run_dates
    from quality.validate import validate_table

    config = _config(args)
    spark = spark_for(config)
    latest = None if args.full else latest_run_dates(spark, config)
    if latest is None:
        if not args.full:
            _say("no run recorded yet: validating the whole table")
        report = validate_table(spark, config, full=True)
    else:
        _say(f"validating the partitions of run {latest[0]}: "
             + (", ".join(d.isoformat() for d in latest[1]) or "(none)"))
        report = validate_table(spark, config, dates=latest[1])
    for line in report.summary_lines():
        _say(line)
    return 0 if report.success else 3


def cmd_report(args: argparse.Namespace) -> int:
    from pipelines.runtime.spark import spark_for
    from quality.report import write_report

    config = _config(args)
    out = write_report(spark_for(config), config, Path(args.out) if args.out else None)
    _say(f"dashboard written to {out}")
    return 0


def cmd_rewind(args: argparse.Namespace) -> int:
    from pipelines.ops.rewind import rewind
    from pipelines.runtime.spark import spark_for

    config = _config(args)
    rewind(spark_for(config), config, to_version=args.to_version,
           to_timestamp=args.to_timestamp, dry_run=args.dry_run, say=_say)
    _say(f"next: deltasink run --config {args.config}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from pipelines.ops.replay import replay
    from pipelines.runtime.spark import spark_for

    config = _config(args)
    only = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    replay(spark_for(config), config, args.from_timestamp, only_topics=only, say=_say)
    return 0


def cmd_quarantine(args: argparse.Namespace) -> int:
    from pipelines.runtime.spark import spark_for

    config = _config(args)
    if args.action == "list":
        from pipelines.ops.quarantine_list import list_quarantine

        list_quarantine(spark_for(config), config, reason=args.reason, since=args.since,
                        say=_say)
        return 0
    from pipelines.ops.redrive import redrive

    redrive(spark_for(config), config, reason=args.reason, since=args.since,
            dry_run=args.dry_run, say=_say)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from pipelines.ops.demo import run_demo

    return run_demo(Path(args.dir), args.port)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to render ``--help`` in the README)."""
    parser = argparse.ArgumentParser(
        prog="deltasink", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Land Kafka event streams in Delta Lake exactly once: parse, quarantine bad "
                    "records, deduplicate on the event id, insert-only MERGE, idempotent commits.")
    parser.add_argument("--version", action="version", version=f"deltasink {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], int], text: str,
            config: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if config:
            p.add_argument("--config", "-c", required=True, metavar="FILE",
                           help="the pipeline's YAML config")
        p.set_defaults(func=func)
        return p

    add("setup", cmd_setup, "fetch and cache the JVM jars (Delta, Kafka connector, Kafka broker)",
        config=False)
    p = add("broker", cmd_broker, "start or stop the embedded Kafka broker (local development)",
            config=False)
    p.add_argument("action", choices=["start", "stop", "status"])
    p.add_argument("--port", type=int, help="listener port (default 9092, or the last used)")
    p.add_argument("--data-dir", help="where the broker keeps its data (default ./lake/_broker)")
    p = add("produce", cmd_produce, "send sample events, with duplicates and poison pills")
    p.add_argument("--count", type=int, required=True, help="distinct valid events to send")
    p.add_argument("--duplicate-rate", type=float, default=0.0, metavar="R",
                   help="extra copies of events, as a share of --count (0.1 = 10%%)")
    p.add_argument("--poison-rate", type=float, default=0.0, metavar="R",
                   help="unparseable records, as a share of --count, of every poison kind")
    p.add_argument("--seed", type=int, default=0, help="same seed, same event ids (default 0)")
    p.add_argument("--topic", help="default: the first of source.topics")
    p.add_argument("--partitions", type=int, default=3, help="for a new topic (default 3)")
    p = add("run", cmd_run, "stream Kafka into the Delta target, then validate the result")
    p.add_argument("--trigger", choices=["available-now", "continuous"], default="available-now",
                   help="available-now: process what exists, then stop (scheduled jobs); "
                        "continuous: a micro-batch every --interval until Ctrl-C")
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
    """Entry point of the ``deltasink`` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="deltasink: %(message)s")
    try:
        return int(args.func(args))
    except (ConfigError, SchemaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except QualityError as exc:
        print(f"data quality check failed: {exc}", file=sys.stderr)
        return 3
    except DeltasinkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
