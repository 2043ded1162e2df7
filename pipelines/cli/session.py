"""The Spark session a ``deltasink`` command runs on, with a driver JVM that follows it.

A local session starts its driver JVM as a child of this process. A stop signalled to the whole
process group (Ctrl-C in a terminal, ``kill -TERM -<pgid>``, a service manager, a job cancel)
would reach that JVM too, and one that died of SIGTERM beside the stopping command broke its
stop. Started here, it ignores SIGINT and SIGTERM (:func:`pipelines.runtime.signals.jvm_follows`)
and exits when the command does. A Spark Connect session starts no process, and on Databricks
the runtime's session is used as it is.

Ctrl-C stays the command's own (:func:`pipelines.cli.stops.stop_on_signals`), as SIGTERM is.
PySpark's context installs a Ctrl-C handler of its own, which cancels every job with a Py4J call
made inside the handler, on the connection of the Spark call the main thread was waiting in, and
raises there: a run stopped that way never stopped its query, and ended by exiting.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pipelines.runtime.signals import jvm_follows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.config.model import PipelineConfig


def session_for(config: PipelineConfig) -> SparkSession:
    """The session for ``config`` (:func:`pipelines.runtime.spark.spark_for`)."""
    from pipelines.runtime.spark import spark_for

    with jvm_follows(), _own_ctrl_c():
        return spark_for(config)


def setup_session(packages: tuple[str, ...]) -> SparkSession:
    """``deltasink setup``'s session, resolving ``packages`` too
    (:func:`pipelines.runtime.spark.get_spark`)."""
    from pipelines.runtime.spark import get_spark

    with jvm_follows(), _own_ctrl_c():
        return get_spark("deltasink-setup", packages=packages)


@contextmanager
def _own_ctrl_c() -> Iterator[None]:
    """Put back, after the block, the SIGINT handler the block began with (the command's), in
    place of the one PySpark's context installs."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        yield
    finally:
        if before is not None:
            signal.signal(signal.SIGINT, before)
