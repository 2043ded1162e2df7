"""A command's session leaves Ctrl-C to the command (``pipelines/cli/session.py``): PySpark's
context installs a SIGINT handler of its own when it starts, which would raise inside the Spark
call the main thread waits in, and the command's handler is put back over it."""

from __future__ import annotations

import signal

from pipelines.cli.session import _own_ctrl_c


def _command(_signum: int, _frame: object) -> None:
    """Stands for the command's handler (``stop_on_signals``)."""


def _pyspark(_signum: int, _frame: object) -> None:
    """Stands for the handler PySpark's ``SparkContext`` installs as it starts."""


def test_the_command_keeps_its_ctrl_c_handler_over_the_one_a_new_context_installs() -> None:
    previous = signal.signal(signal.SIGINT, _command)
    try:
        with _own_ctrl_c():
            signal.signal(signal.SIGINT, _pyspark)  # as a new SparkContext does
        assert signal.getsignal(signal.SIGINT) is _command
    finally:
        signal.signal(signal.SIGINT, previous)
