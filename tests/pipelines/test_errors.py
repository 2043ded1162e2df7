"""The one line a failure is shown as: no Python traceback handed over by Spark."""

from __future__ import annotations

from pipelines.errors import failure_line

#: A foreachBatch body's failure as Spark reports it: its Python traceback after "Return
#: Message", then the query's description.
BATCH_FAILURE = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided \
function in foreach batch sink. Reason: An exception was raised by the Python Proxy. Return \
Message: Traceback (most recent call last):
  File "/x/pipelines/sink/batch.py", line 120, in __call__
    self._write(df, batch_id)
OSError: [Errno 28] No space left on device

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x/py4j/clientserver.py", line 617, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
RuntimeError: the batch could not be written

=== Streaming Query ===
Identifier: deltasink-orders [id = 1, runId = 2]
Current State: ACTIVE
"""


def test_a_batch_failure_line_names_the_exception_raised_not_the_traceback() -> None:
    line = failure_line(BATCH_FAILURE)
    assert "Traceback" not in line
    assert line.startswith("[FOREACH_BATCH_USER_FUNCTION_ERROR]")
    assert line.endswith("Return Message: RuntimeError: the batch could not be written")


def test_a_plain_failure_keeps_its_first_line_within_the_limit() -> None:
    assert failure_line("\n  first problem\nsecond") == "first problem"
    assert failure_line("x" * 400) == "x" * 300
    assert failure_line(ValueError()) == "ValueError"
