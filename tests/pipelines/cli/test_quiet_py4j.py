"""Py4J's own log records never reach a ``deltasink`` command's stderr (without ``--debug``).

Py4J logs through its loggers (``py4j.clientserver``, ``py4j.java_gateway``: "Exception occurred
while shutting down connection", with a traceback, when a stop breaks a call or the gateway
closes) and through the root logger. A filter on the root logger does not see the records of
other loggers (Python applies a logger's filters only to records logged on it), so those
reached stderr, prefixed ``deltasink:``, after a stop signal and after a checkpoint recovery.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from pipelines.cli.parser import _quiet_py4j


@pytest.fixture
def stderr_log() -> Iterator[io.StringIO]:
    """What the root logger's handler (``deltasink``'s ``basicConfig``) would print."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    py4j = logging.getLogger("py4j")
    propagate = py4j.propagate
    try:
        yield out
    finally:
        root.removeHandler(handler)
        py4j.propagate = propagate


def test_py4j_records_of_its_own_loggers_are_dropped_and_deltasinks_are_kept(
        stderr_log: io.StringIO) -> None:
    _quiet_py4j()
    try:
        raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError:
        logging.getLogger("py4j.clientserver").exception(
            "Exception occurred while shutting down connection")
        logging.getLogger("py4j.java_gateway").exception("Error while sending or receiving")
    logging.getLogger("deltasink").warning("a line of deltasink's own")

    assert stderr_log.getvalue() == "a line of deltasink's own\n"
