"""The Spark Connect client's guards: ``spark.remote`` probed before a session opens, and a
bound on how long a call waits for a server that stops answering.

PySpark's own retry policy waits up to 10 minutes, silently: a typo in ``spark.remote`` or a
server that died mid-run looked like a hang (issue 33). :func:`check_remote` fails at once on an
address where nothing listens; :func:`bound_retries` gives a session a policy that waits about a
minute, says once that it is waiting, and then gives up on that server for the whole process.
:mod:`pipelines.runtime.spark` opens the session with both.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from typing import TypeVar

from pyspark.sql import SparkSession

from pipelines.errors import ConfigError, EnvironmentSetupError

#: How long, in all, a Spark Connect call waits for a server that does not answer (refused,
#: gone, restarting) before it fails. PySpark's own policy waits up to 10 minutes, silently: a
#: typo in ``spark.remote`` or a server that died mid-run looked like a hang (issue 33). The
#: retries back off 0.05, 0.2, 0.8, 3.2 s, then 10 s at a time: about a minute in all, enough
#: for a brief network cut, short enough that a dead server is reported while someone waits.
CONNECT_WAIT_RETRIES = 9
CONNECT_MAX_BACKOFF_MS = 10_000
#: Seconds to wait for the TCP connection to ``spark.remote`` before the session is opened.
CONNECT_PROBE_TIMEOUT = 10.0
#: The proxy variables gRPC honours: with one set, a direct TCP probe proves nothing.
_PROXY_VARS = ("grpc_proxy", "https_proxy", "http_proxy", "GRPC_PROXY", "HTTPS_PROXY",
               "HTTP_PROXY")


#: Connect endpoints (``host:port``) whose server this process gave up on: later calls to them
#: fail at once (a run's clean-up calls would otherwise each wait the whole bound again), and
#: the wait is announced once.
_GIVEN_UP: set[str] = set()
_ANNOUNCED: set[str] = set()


def _endpoint(url: str) -> str:
    return redact_url(url).removeprefix("sc://").rstrip("/")


def gave_up_on() -> str | None:
    """The ``sc://`` URL of a Connect server this process stopped retrying, if any."""
    return next((f"sc://{e}" for e in sorted(_GIVEN_UP)), None)


def _bounded_policy(url: str) -> object:
    """PySpark's default Connect retry policy (the same retryable errors), bounded to about a
    minute of waiting, that says once on stderr that it is waiting, and for what.

    Once a call has waited the whole bound, the server is taken as gone: every later call of
    this process to it fails at once (see :data:`_GIVEN_UP`). Built on first use:
    :mod:`pyspark.sql.connect` imports grpc, which a classic run never needs.
    """
    from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

    endpoint = _endpoint(url)

    class _SayingState(RetryPolicyState):
        def next_attempt(self) -> int | None:
            if endpoint in _GIVEN_UP:
                return None
            wait = super().next_attempt()
            if wait is None:
                _GIVEN_UP.add(endpoint)
            elif wait >= 1000 and endpoint not in _ANNOUNCED:
                _ANNOUNCED.add(endpoint)
                total = (CONNECT_WAIT_RETRIES - 4) * CONNECT_MAX_BACKOFF_MS // 1000 + 4
                print(f"deltasink: the Spark Connect server at sc://{endpoint} (spark.remote) "
                      f"does not answer; retrying for up to {total}s", file=sys.stderr,
                      flush=True)
            return wait

    class _BoundedPolicy(DefaultPolicy):
        def __init__(self) -> None:
            super().__init__(max_retries=CONNECT_WAIT_RETRIES,
                             max_backoff=CONNECT_MAX_BACKOFF_MS)

        def to_state(self) -> RetryPolicyState:
            return _SayingState(self)

    return _BoundedPolicy()


#: Attempts at starting a streaming query whose ``foreachBatch`` worker did not start in time.
#: Over Spark Connect, the server starts the function's Python worker when the query starts and
#: waits a fixed 10 s (``PythonWorkerFactory``, not a setting in Spark 4.0) for it to connect
#: back. On a busy server the worker's imports alone can take longer, and the start fails with
#: "Python worker failed to connect back" before the query exists: nothing was read or written,
#: so starting it again is safe.
WORKER_START_ATTEMPTS = 3
_WORKER_LATE = "Python worker failed to connect back"

Started = TypeVar("Started")


def start_query(start: Callable[[], Started], name: str) -> Started:
    """``start()`` (a ``DataStreamWriter.start``), again when the server's ``foreachBatch``
    worker did not connect back in time; says so on stderr each time.

    Args:
        start: starts the query.
        name: the pipeline or operation, for the line.

    Raises:
        Exception: what ``start`` raised otherwise, or at the last attempt.
    """
    for attempt in range(1, WORKER_START_ATTEMPTS):
        try:
            return start()
        except Exception as exc:
            if _WORKER_LATE not in str(exc):
                raise
            print(f"deltasink: {name}: the Spark Connect server's foreachBatch worker did not "
                  "connect back within Spark's 10 s (a busy server); nothing was read, starting "
                  f"the query again ({attempt + 1}/{WORKER_START_ATTEMPTS})", file=sys.stderr,
                  flush=True)
    return start()


def bound_retries(spark: SparkSession, url: str) -> None:
    """Give the Connect session ``spark`` the bounded retry policy of :func:`_bounded_policy`."""
    client = getattr(spark, "client", None)
    if client is not None and hasattr(client, "set_retry_policies"):
        client.set_retry_policies([_bounded_policy(url)])


def check_remote(url: str) -> tuple[str, int]:
    """Check that ``url`` is a Spark Connect URL and that something listens at its address.

    A refused or unresolvable address fails at once, a silent one after
    :data:`CONNECT_PROBE_TIMEOUT` seconds, instead of PySpark's minutes of silent retries.
    Behind a proxy (``grpc_proxy``, ``https_proxy``, ...) only the URL is checked.

    Returns:
        Its host and port.

    Raises:
        ConfigError: ``url`` is not an ``sc://host[:port]`` URL.
        EnvironmentSetupError: nothing answers at its address.
    """
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    shown = redact_url(url)
    try:
        builder = DefaultChannelBuilder(url)
        host, port = builder.host, int(builder.endpoint.rsplit(":", 1)[1])
    except Exception:
        raise ConfigError(f"spark.remote {shown!r} is not a Spark Connect URL: expected "
                          "sc://host:port, e.g. sc://127.0.0.1:15002") from None
    if any(os.environ.get(name) for name in _PROXY_VARS):
        return host, port
    try:
        with socket.create_connection((host, port), timeout=CONNECT_PROBE_TIMEOUT):
            pass
    except OSError as exc:
        if isinstance(exc, TimeoutError | socket.timeout):
            why = f"no answer within {CONNECT_PROBE_TIMEOUT:.0f}s"
        elif isinstance(exc, socket.gaierror):
            why = f"unknown host {host!r}"
        elif isinstance(exc, ConnectionRefusedError):
            why = "connection refused: nothing listens on that port"
        else:
            why = exc.strerror or str(exc)
        raise EnvironmentSetupError(
            f"spark.remote {shown}: cannot reach the Spark Connect server ({why}). Is it "
            "running? (`deltasink connect-server` starts one here)") from None
    return host, port


def connect_reason(exc: BaseException) -> str:
    """One line for a Spark Connect failure: gRPC's status and details when ``exc`` (or what
    caused it) carries them, else its first line."""
    import re

    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen)
        found = re.search(r"status = StatusCode\.(\w+)\s+details = \"([^\"]*)\"", text)
        if found:
            return f"{found[1]}: {found[2]}"[:300]
        seen = seen.__cause__ or seen.__context__
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def redact_url(url: str) -> str:
    """A Spark Connect URL without its parameters (``;token=...`` is a secret)."""
    return url.split(";", 1)[0].split("/;", 1)[0]
