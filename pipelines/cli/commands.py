"""One function per ``deltasink`` subcommand: load the config, call into the package, print.

Each takes the parsed ``argparse.Namespace`` and returns the exit code;
:mod:`pipelines.cli.parser` parses the arguments and turns any failure into one line. Imports are
local to each command, so ``deltasink --help`` and ``deltasink init`` never start Spark.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli.failures import config_secrets
from pipelines.cli.group import cmd_run_group, config_files
from pipelines.cli.session import session_for
from pipelines.errors import ConfigError

if TYPE_CHECKING:
    from pipelines.config.model import PipelineConfig


def _say(line: str) -> None:
    print(line, flush=True)


def _config(args: argparse.Namespace) -> PipelineConfig:
    from pipelines.config.loader import load_config

    config = load_config(args.config)
    args.secrets = config_secrets(config)  # masked in any error line
    return config


def cmd_init(args: argparse.Namespace) -> int:
    from pipelines.config.starter import default_name, starter_config, write_starter

    out = Path(args.out or f"{args.name or default_name(args.topic)}.yml")
    write_starter(out, starter_config(topic=args.topic, bootstrap_servers=args.bootstrap_servers,
                                      target=args.target, out=out, name=args.name,
                                      checkpoint=args.checkpoint))
    _say(f"wrote {out}: the required keys for topic {args.topic}; optional keys are commented "
         "with their defaults")
    _say(f"next: deltasink run --config {out}")
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


def cmd_connect_server(args: argparse.Namespace) -> int:
    import time

    from pipelines.runtime.connect_server import ConnectServer
    from pipelines.runtime.jvm import cache_dir

    log = Path(args.log) if args.log else cache_dir() / "connect-server.log"
    _say(f"starting Spark's Connect server on 127.0.0.1:{args.port} (log {log}) ...")
    server = ConnectServer.start(log, port=args.port, master=args.master)
    _say(f"spark connect server running: spark.remote = {server.url} (Ctrl-C stops it)")
    try:
        while server.process.poll() is None:
            time.sleep(1.0)
    except KeyboardInterrupt:
        _say("stopping the Spark Connect server")
    finally:
        server.stop()
    return 0


def cmd_produce(args: argparse.Namespace) -> int:
    from pipelines.kafka.produce import produce_events

    config = _config(args)
    topic = args.topic or (config.source.topics[0] if config.source.topics else None)
    if not topic:
        raise ConfigError("source uses topic_pattern; pass --topic to choose where to produce")
    summary = produce_events(config.source.bootstrap_servers, topic, args.count,
                             duplicate_rate=args.duplicate_rate, poison_rate=args.poison_rate,
                             seed=args.seed, partitions=args.partitions, progress=_say,
                             legacy_rate=args.legacy_rate)
    _say(summary.describe())
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from pipelines.run import run_pipeline
    from pipelines.runtime.phases import Phases
    from pipelines.runtime.preload import preload

    files = config_files(args)
    if args.all is not None or len(files) > 1:
        return cmd_run_group(args, files)
    args.config = files[0]
    clock = Phases()
    config = _config(args)
    if config.quality.enabled and not args.no_validate:
        preload("quality.validate")  # Great Expectations imports while the JVM starts
    with clock.phase("spark"):
        spark = session_for(config)
    run_pipeline(spark, config, trigger=args.trigger, interval=args.interval,
                 validate=not args.no_validate, progress=_say, phases=clock)
    _say(clock.line())  # where the run's seconds went, phase by phase
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from pipelines.ops.status import collect_status, format_status

    config = _config(args)
    status = collect_status(session_for(config), config)
    if args.json:
        _say(json.dumps(status, indent=2, default=str))
    else:
        for line in format_status(status):
            _say(line)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from quality.results_read import latest_run_dates
    from quality.validate import validate_table

    config = _config(args)
    spark = session_for(config)
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
    from quality.report import write_report

    config = _config(args)
    out = write_report(session_for(config), config, Path(args.out) if args.out else None)
    _say(f"dashboard written to {out}")
    return 0


def cmd_rewind(args: argparse.Namespace) -> int:
    from pipelines.ops.rewind import rewind

    config = _config(args)
    rewind(session_for(config), config, to_version=args.to_version,
           to_timestamp=args.to_timestamp, dry_run=args.dry_run, say=_say)
    _say(f"next: deltasink run --config {args.config}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from pipelines.ops.replay import replay

    config = _config(args)
    only = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    replay(session_for(config), config, args.from_timestamp, only_topics=only, say=_say)
    return 0


def cmd_quarantine(args: argparse.Namespace) -> int:

    config = _config(args)
    if args.action == "list":
        from pipelines.ops.quarantine_list import list_quarantine

        list_quarantine(session_for(config), config, reason=args.reason, since=args.since,
                        say=_say)
        return 0
    from pipelines.ops.redrive import redrive

    redrive(session_for(config), config, reason=args.reason, since=args.since,
            dry_run=args.dry_run, say=_say)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from pipelines.ops.demo import run_demo

    return run_demo(Path(args.dir), args.port)
