"""``deltasink setup``: fetch the JVM jars once, those every user needs and those asked for.

Every user needs Delta, the Kafka connector, spark-avro and the embedded broker's jars: plain
``setup`` fetches those (``make install`` runs it). S3A's (hadoop-aws and the AWS SDK bundle)
are most of the whole, and only pipelines on S3 use them: ``setup --s3`` fetches them too, and so
does ``setup --config FILE`` when that config has a location on S3 (a folder: each of its
``*.yml``, as ``run --all`` reads them). A run that needs them without them is refused in one line
(:func:`pipelines.runtime.jvm.require_fetched`) naming ``deltasink setup --s3``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipelines.cli.session import setup_session

TEXT = ("fetch and cache the JVM jars every pipeline needs (Delta, the Kafka connector, "
        "spark-avro, the Kafka broker); --s3 or a --config on S3 adds S3A's")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``setup``'s flags (its ``--help`` and the docs' CLI reference)."""
    parser.add_argument("--s3", action="store_true",
                        help="also fetch S3A's jars (hadoop-aws and the AWS SDK bundle: "
                             "about 1.6 GB more on disk), which pipelines on s3:// or s3a:// "
                             "need")
    parser.add_argument("--config", "-c", action="append", metavar="FILE|DIR",
                        help="also fetch what this pipeline config needs (S3A's jars when a "
                             "location is on S3); give it again for several, or a folder to "
                             "read each of its *.yml configs, as run --all does")


def config_files(entries: list[str]) -> list[Path]:
    """The config files ``--config`` names: each file, and each ``*.yml`` of each folder.

    Raises:
        ConfigError: a folder does not exist or holds no config.
    """
    from pipelines.cli.group import config_files as group_files

    found: list[Path] = []
    for entry in entries:
        folder = Path(entry)
        found += group_files(argparse.Namespace(all=entry, config=None)) if folder.is_dir() \
            else [folder]
    return found


def s3_needed_by(files: list[Path]) -> list[str]:
    """The names of the pipelines among ``files`` whose local session needs S3A's jars.

    Raises:
        ConfigError: a config does not load (it would not run either).
    """
    from pipelines.config.loader import load_config
    from pipelines.runtime.spark import needs_s3

    return [config.name for config in map(load_config, files) if needs_s3(config)]


def wants_s3(args: argparse.Namespace) -> tuple[bool, str]:
    """Whether this ``setup`` fetches S3A's jars, and why (a line for the user)."""
    if args.s3:
        return True, "s3: asked for (--s3)"
    files = config_files(args.config or [])
    on_s3 = s3_needed_by(files)
    if on_s3:
        return True, f"s3: needed by {', '.join(on_s3)} (a location on S3)"
    if files:
        return False, f"s3: not fetched: none of the {len(files)} config(s) is on S3"
    return False, "s3: not fetched (pipelines on s3:// or s3a:// need it: deltasink setup --s3)"


def cmd_setup(args: argparse.Namespace) -> int:
    """Fetch the jars of :func:`pipelines.runtime.jvm.plan`, then start a session once, which
    resolves the same packages through Spark's Ivy and so fills its cache: no run downloads."""
    from pipelines.runtime import jvm

    s3, why = wants_s3(args)
    print(why, flush=True)
    for line in jvm.fetch(s3=s3):
        print(line, flush=True)
    spark = setup_session(jvm.S3_PACKAGES if s3 else ())
    spark.range(1).count()
    spark.stop()
    print(f"spark session with Delta, the Kafka connector, spark-avro{' and S3A' if s3 else ''}: "
          f"ok (jars cached in {jvm.m2_repository()})", flush=True)
    return 0
