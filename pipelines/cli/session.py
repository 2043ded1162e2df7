"""The Spark session a ``deltasink`` command runs on, with a driver JVM that follows it.

A local session starts its driver JVM as a child of this process. A stop signalled to the whole
process group (Ctrl-C in a terminal, ``kill -TERM -<pgid>``, a service manager, a job cancel)
would reach that JVM too, and one that died of SIGTERM beside the stopping command broke its
stop. Started here, it ignores SIGINT and SIGTERM (:func:`pipelines.runtime.signals.jvm_follows`)
and exits when the command does. A Spark Connect session starts no process, and on Databricks
the runtime's session is used as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.runtime.signals import jvm_follows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.config.model import PipelineConfig


def session_for(config: PipelineConfig) -> SparkSession:
    """The session for ``config`` (:func:`pipelines.runtime.spark.spark_for`)."""
    from pipelines.runtime.spark import spark_for

    with jvm_follows():
        return spark_for(config)


def setup_session(packages: tuple[str, ...]) -> SparkSession:
    """``deltasink setup``'s session, resolving ``packages`` too
    (:func:`pipelines.runtime.spark.get_spark`)."""
    from pipelines.runtime.spark import get_spark

    with jvm_follows():
        return get_spark("deltasink-setup", packages=packages)
