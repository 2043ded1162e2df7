"""The stop signals this process received: one record for the CLI's handler and for the one
chained before PySpark's Ctrl-C handler (:mod:`pipelines.runtime.spark`), read by the CLI
(:mod:`pipelines.cli.parser`) to report a broken Spark call as the interrupt it was."""

from __future__ import annotations

#: The stop signals (SIGINT, SIGTERM) this process received during a command, oldest first:
#: the CLI's own handler and the one chained before PySpark's Ctrl-C handler note them here, so
#: a Spark call broken by the interrupt is reported as the interrupt, not as a Spark error.
SIGNALS: list[int] = []


def note_signal(signum: int) -> None:
    """Record that the stop signal ``signum`` arrived."""
    SIGNALS.append(signum)
