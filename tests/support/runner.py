"""Run the `deltasink` CLI as a real process group, optionally killing it at a chosen moment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

DELTASINK = str(Path(sys.executable).parent / "deltasink")
#: Names a file that every :func:`deltasink` process is noted in (:func:`_note`).
PROCESS_LOG = "TESTS_PROCESS_LOG"

#: JVM options for every Spark JVM of a test run (the session's driver, the Spark Connect server,
#: the ``deltasink`` processes), set as ``SPARK_SUBMIT_OPTS`` by ``tests/conftest.py``: Spark's
#: launcher adds them to the driver's command line, beside ``SHORT_RUN_JIT``. The serial
#: collector: a test's heap is small, and G1's concurrent threads cost CPU the tests need (one
#: session, four pipelines run twice each: 181 and 156 s of JVM CPU, against 225, 202 and 192 s
#: with G1; bench/results/test-durations.md). Neither changes what a run does.
TEST_JVM_OPTS = "-XX:+UseSerialGC"
#: Spark settings of the tests' long-lived sessions (the ``spark`` fixture's and the Spark
#: Connect server's): expressions are evaluated by Spark's interpreted implementations instead of
#: generated and compiled code. A test's batch is a few hundred rows, and nearly every statement
#: is new code to Janino (literals are inlined), so compiling it cost more than running it: one
#: session, four pipelines of 2,800 events run warm, 101 and 106 s of JVM CPU against 125 and
#: 170 s (alternated, bench/results/test-durations.md). The results are the same by Spark's
#: contract (its own suites run both). The ``deltasink`` processes of the tests, ``make demo``
#: and ``make bench`` keep Spark's default, code generation, as users run it.
TEST_SPARK_CONF = {"spark.sql.codegen.wholeStage": "false",
                   "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
#: A ``deltasink`` process started by a test is one cold run of a few small batches: C1 only, as
#: bench/README.md measured for a short cold run (-28% at 50k events; worse at 1M, so not the
#: product's default). JVM flags only: also given to executors (``extraJavaOptions``), where
#: Spark refuses ``-Dspark.*`` properties.
COLD_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: :data:`TEST_SPARK_CONF` as Java system properties, which a driver's ``SparkConf`` reads: a
#: test's ``deltasink`` process evaluates expressions interpreted too, unless it asks for
#: ``codegen``. A cold run of 600 events in batches of 200, alternated three times each: 31.0 s
#: against 39.1 s with code generation (validation 4.1 s against 7.7 s; bench/results/
#: test-durations.md). One end-to-end CLI test keeps Spark's default, as users run it.
INTERPRETED = " ".join(f"-D{key}={value}" for key, value in TEST_SPARK_CONF.items())


def cold_env(env: Mapping[str, str] | None = None, *, codegen: bool = False) -> dict[str, str]:
    """The environment of a test's ``deltasink`` process: ``env`` (default: this process's)
    without ``DELTASINK_FAULT``, with :data:`COLD_JVM_OPTS` (and :data:`INTERPRETED` unless
    ``codegen``) as the driver's JVM options, unless the caller chose its own."""
    base = dict(os.environ if env is None else env)
    base.pop("DELTASINK_FAULT", None)
    if base.get("SPARK_SUBMIT_OPTS", TEST_JVM_OPTS) == TEST_JVM_OPTS:
        base["SPARK_SUBMIT_OPTS"] = COLD_JVM_OPTS if codegen else f"{COLD_JVM_OPTS} {INTERPRETED}"
    return base


def killpg(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the process group of ``proc`` (the driver JVM included)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def descendants(pid: int) -> dict[int, str]:
    """The processes below ``pid`` now (pid -> command name), read from /proc."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        parents[int(entry.name)] = (int(stat[stat.rindex(")") + 2:].split()[1]), name)
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        here = frontier.pop()
        for child, (parent, name) in parents.items():
            if parent == here and child not in found:
                found[child] = name
                frontier.append(child)
    return found


def _holds_lock(lock: Path, pid: int) -> bool:
    try:
        return lock.read_text().strip() == str(pid)
    except OSError:
        return False


def has_batch_commit(table: Path) -> bool:
    """Whether the Delta table at ``table`` holds a micro-batch's commit (its commitInfo's
    userMetadata, JSON inside JSON, names the batch: ``pipelines/ledger/record.py``)."""
    try:
        return any('\\"batch\\":' in log.read_text(errors="replace")
                   for log in (table / "_delta_log").glob("*.json"))
    except OSError:
        return False


def deltasink(*args: str, fault: str | None = None, kill_after: float | None = None,
              kill_after_lock: Path | None = None, kill_after_commit: Path | None = None,
              kill_when: Callable[[], bool] | None = None,
              kill_with: signal.Signals = signal.SIGKILL, kill_group: bool = True,
              left: dict[int, str] | None = None,
              env: Mapping[str, str] | None = None,
              timeout: float = 900, cwd: Path | None = None,
              children: set[str] | None = None,
              codegen: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``deltasink <args>`` in its own process group.

    Args:
        args: the CLI arguments.
        fault: a ``DELTASINK_FAULT`` spec (see ``pipelines/faults.py``).
        kill_after: SIGKILL the whole process group (driver JVM included) after this many
            seconds, as a lost node would; the return code is then ``-SIGKILL``. With
            ``kill_with``, send that signal instead.
        kill_after_lock: count ``kill_after`` from the moment this checkpoint lock file holds
            the process's pid (the run is past start-up and streaming), not from the start.
        kill_after_commit: count ``kill_after`` from the moment this Delta table holds a
            micro-batch's commit (:func:`has_batch_commit`): the kill lands after one.
        kill_when: count ``kill_after`` from the moment this returns true (polled every 0.2 s).
        kill_with: the signal ``kill_after`` sends. Another than SIGKILL (SIGTERM, SIGINT) is a
            stop the process handles: it is sent once, and the process is waited for (up to
            ``timeout``) to end by itself.
        kill_group: send ``kill_with`` to the whole process group (the driver JVM and any Python
            workers too), as a terminal's Ctrl-C, ``kill -TERM -<pgid>``, systemd or a job
            cancel do; false: to the ``deltasink`` process alone.
        left: filled with the processes that were below ``deltasink`` when ``kill_with`` was
            sent and still ran 60 s after it exited (they are SIGKILLed then).
        env: the environment (default: this process's, without ``DELTASINK_FAULT``).
        timeout: give up (and kill) after this many seconds.
        cwd: the working directory (default: this process's).
        children: filled with the command names of every process the run started below it
            (sampled every 0.2 s), e.g. to show that a Spark Connect client starts no JVM.
        codegen: run with Spark's code generation, the product's default (:func:`cold_env`).
    """
    base = cold_env(env, codegen=codegen)
    if fault:
        base["DELTASINK_FAULT"] = fault
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([DELTASINK, *args], env=base, stdout=out, stderr=err, text=True,
                                start_new_session=True, cwd=cwd)
        started = time.monotonic()
        waits = kill_after_lock or kill_after_commit or kill_when
        kill_at = None if kill_after is None or waits else started + kill_after
        timed_out = False
        below: dict[int, str] = {}
        signalled = False
        while proc.poll() is None:
            now = time.monotonic()
            if kill_at is None and kill_after is not None and (
                    (kill_after_lock is not None and _holds_lock(kill_after_lock, proc.pid))
                    or (kill_after_commit is not None and has_batch_commit(kill_after_commit))
                    or (kill_when is not None and kill_when())):
                kill_at = now + kill_after
            if kill_at is not None and now >= kill_at and not signalled:
                if kill_with == signal.SIGKILL:
                    break
                below = descendants(proc.pid)
                (os.killpg if kill_group else os.kill)(proc.pid, kill_with)
                signalled = True
            if now - started > timeout:
                timed_out = True
                break
            if children is not None:
                children.update(descendants(proc.pid).values())
            time.sleep(0.2)
        if signalled and not timed_out and left is not None:
            left.update(outliving(below, 60.0))
        if proc.returncode is None or proc.returncode < 0 or signalled:
            killpg(proc)  # like a lost node: nothing of the job survives, JVM included
        proc.wait()
        if timed_out:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        _note(args, time.monotonic() - started, proc.returncode)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def outliving(processes: dict[int, str], seconds: float) -> dict[int, str]:
    """Those of ``processes`` still running after up to ``seconds`` of waiting for them."""
    deadline = time.monotonic() + seconds
    while (running := {p: n for p, n in processes.items() if _alive(p)}) \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    return running


def _note(args: tuple[str, ...], seconds: float, code: int) -> None:
    """Append the process's test, command, wall seconds and exit code to the file named by
    ``TESTS_PROCESS_LOG`` (one JSON line each), if set: what the suite spends in
    ``deltasink`` processes, for bench/results/test-durations.md."""
    log = os.environ.get(PROCESS_LOG)
    if log:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": test, "command": args[0] if args else "",
                                  "seconds": round(seconds, 1), "code": code}) + "\n")


def run(config: Path, *, validate: bool = False, **kwargs: object
        ) -> subprocess.CompletedProcess[str]:
    """``deltasink run --config <config>`` (``--no-validate`` unless ``validate``)."""
    args = ["run", "--config", str(config)] + ([] if validate else ["--no-validate"])
    return deltasink(*args, **kwargs)  # type: ignore[arg-type]
