"""``deltasink run`` with several ``--config`` (or ``--all``): one group in one Spark session.

What the group does is :mod:`pipelines.group`; this is its face. Each pipeline ends in one
line: what it landed and its verdict, or its failure (masked, as every error line is). The exit
code is the worst of theirs, 2 over 1 over 3 over 0, so a scheduler sees a failure whichever
pipeline had it. A stop signal stops every pipeline: each says so in its line (what the stop
broke, a cancelled batch, is no failure of its own), and the group ends as any stopped run does
(:mod:`pipelines.cli.parser`: one line, 130 or 143).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.cli.failures import broken_by_stop, classify, config_secrets, report_failure
from pipelines.cli.session import session_for
from pipelines.errors import ConfigError, SchemaError
from pipelines.runtime.signals import SIGNALS

if TYPE_CHECKING:
    from pipelines.config.model import PipelineConfig
    from pipelines.group import Outcome

#: ``deltasink run --all``'s folder: the bundle's pipeline configs.
GROUP_DIR = "notebooks/pipelines.d"
#: Exit codes from the best to the worst (the epilog's): a group exits with its worst.
_SEVERITY = (0, 3, 1, 2)


def config_files(args: argparse.Namespace) -> list[Path]:
    """The configs a run names: each ``--config``, or every ``*.yml`` in the ``--all`` folder.

    Raises:
        ConfigError: the ``--all`` folder does not exist or holds no config.
    """
    if args.all is None:
        return [Path(file) for file in args.config]
    folder = Path(args.all)
    if not folder.is_dir():
        raise ConfigError(f"--all {folder}: no such folder")
    files = sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])
    if not files:
        raise ConfigError(f"--all {folder}: no pipeline config (*.yml) in it")
    return files


def worst(codes: list[int]) -> int:
    """The worst exit code of a group's pipelines (2 over 1 over 3 over 0)."""
    return max(codes, key=lambda code: _SEVERITY.index(code) if code in _SEVERITY else 1,
               default=0)


def _load(args: argparse.Namespace, files: list[Path]
          ) -> tuple[list[PipelineConfig], list[tuple[str, BaseException]]]:
    """The configs that can run together, and the refused ones with why (exit 2 each)."""
    from pipelines.config.loader import load_config

    configs: list[PipelineConfig] = []
    refused: list[tuple[str, BaseException]] = []
    args.secrets = set()
    for file in files:
        try:
            config = load_config(file)
        except (ConfigError, SchemaError) as exc:
            refused.append((str(file), exc))
            continue
        args.secrets |= config_secrets(config)
        first = configs[0] if configs else None
        if first is not None and config.spark != first.spark:
            refused.append((config.name, ConfigError(
                f"{file}: its spark section differs from {first.name}'s; a group shares one "
                "Spark session: give both the same spark section, or run it on its own")))
        elif any(c.name == config.name or c.checkpoint == config.checkpoint for c in configs):
            refused.append((config.name, ConfigError(
                f"{file}: the group already has a pipeline named {config.name} or with the "
                f"checkpoint {config.checkpoint}; each pipeline needs its own")))
        else:
            configs.append(config)
    return configs, refused


def session_config(configs: list[PipelineConfig]) -> PipelineConfig:
    """The config the group's one session is built from: their ``spark`` sections agree (see
    :func:`_load`), but only a pipeline with an S3 location brings S3A's jar and settings
    (:func:`pipelines.runtime.spark.spark_for`), so one on S3 if any, else the first."""
    from pipelines.config.paths import locations
    from pipelines.storage import s3

    return next((c for c in configs if s3.any_s3(locations(c))), configs[0])


def _landed(outcome: Outcome) -> str:
    result = outcome.result
    what = (f"{result.batch_count} batches, in={result.records_in} "
            f"inserted={result.inserted} quarantined={result.quarantined}") if result else ""
    verdict = "validation passed" if outcome.validated else "not validated"
    return f"{outcome.name}: ok in {outcome.seconds:.0f}s: {what}; {verdict}"


def _stopped(outcome: Outcome) -> str:
    result = outcome.result
    what = (f": {result.batch_count} batches, in={result.records_in} "
            f"inserted={result.inserted} quarantined={result.quarantined}") if result else ""
    return (f"{outcome.name}: stopped after {outcome.seconds:.0f}s{what}; the next run "
            "continues where it stopped")


def cmd_run_group(args: argparse.Namespace, files: list[Path]) -> int:
    """Run ``files``' pipelines as one group; print a line per pipeline; the worst code."""
    from pipelines.group import run_group
    from pipelines.runtime.preload import preload

    if args.trigger != "available-now":
        raise ConfigError("a group run is available-now only; run a continuous pipeline on its "
                          "own (one --config)")
    if args.parallel < 1:
        raise ConfigError(f"--parallel {args.parallel}: give at least 1")
    configs, refused = _load(args, files)
    debug = bool(getattr(args, "debug", False))
    codes: list[int] = []
    stopped = 0
    for name, exc in refused:
        code, line = classify(exc, debug)
        codes.append(report_failure(exc, code, f"{name}: exit {code}: {line}", debug=debug,
                                    known=args.secrets))
    if configs:
        validate = not args.no_validate
        if validate and any(c.quality.enabled for c in configs):
            preload("quality.validate")  # Great Expectations imports while the JVM starts
        spark = session_for(session_config(configs))
        print(f"group: {len(configs)} pipelines, up to {args.parallel} at a time, in one Spark "
              "session", flush=True)
        for outcome in run_group(spark, configs, parallel=args.parallel, validate=validate,
                                 progress=lambda line: print(line, flush=True)):
            if outcome.error is None:
                codes.append(0)
                print(_landed(outcome), flush=True)
            elif broken_by_stop(outcome.error, SIGNALS):
                stopped += 1  # what the stop broke (a cancelled batch) is the stop
                print(_stopped(outcome), flush=True)
            else:
                code, line = classify(outcome.error, debug)
                codes.append(report_failure(
                    outcome.error, code, f"{outcome.name}: exit {code} after "
                    f"{outcome.seconds:.0f}s: {line}", debug=debug, known=args.secrets))
    failed = sum(1 for code in codes if code)
    print(f"group: {len(codes) + stopped} pipelines, {len(codes) - failed} ok, {failed} failed"
          + (f", {stopped} stopped" if stopped else ""), flush=True)
    if SIGNALS:  # stopped: the interrupt's code and line (pipelines.cli.parser), not theirs
        raise KeyboardInterrupt
    return worst(codes)
