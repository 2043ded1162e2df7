"""Chaos fixtures: the two profiles, a printed seed per test, and the end-of-run verdict table.

Every scenario is parametrized by profile: ``short`` (marker ``extended``, ``make extended``)
and ``long`` (marker ``chaos``, ``make chaos``). ``DELTASINK_CHAOS_SEED`` fixes the seed.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from _pytest.terminal import TerminalReporter

from pipelines.config.env import CHAOS_SEED, setting
from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from tests.support.checker import Verdict


@dataclass(frozen=True)
class Profile:
    """The sizes of one chaos profile."""

    name: str
    events: int          # distinct valid events in a storm (plus 10% duplicates, 1% poison)
    kills: int           # random SIGKILLs in the crash storm
    points: tuple[str, ...]  # named fault points exercised in the crash storm
    batch: int           # max_records_per_batch
    poison_run: int      # poison pills in a row (bad-input scenario)
    small: int           # events for the scenarios that are not about volume
    rounds: int          # checkpoint deletions between runs
    outage: tuple[float, float]  # seconds a frozen broker stays frozen (drawn from the seed)


SHORT = Profile("short", events=3000, kills=3, points=("during_validation",),
                batch=700, poison_run=5_000, small=600, rounds=2, outage=(2.0, 5.0))
LONG = Profile("long", events=50_000, kills=30,
               points=("before_quarantine_commit", "after_quarantine_commit",
                       "before_target_commit", "after_target_commit", "during_validation"),
               batch=5_000, poison_run=100_000, small=5_000, rounds=5, outage=(5.0, 20.0))

#: Parametrize a scenario with both profiles.
PROFILES = [pytest.param(SHORT, marks=[pytest.mark.slow, pytest.mark.extended], id="short"),
            pytest.param(LONG, marks=pytest.mark.chaos, id="long")]

#: (scenario, profile, verdict or None, note) rows, printed by the terminal summary.
RESULTS: list[tuple[str, str, Verdict | None, str]] = []


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """The scenario's seed, printed so that a failure can be replayed."""
    value = int(setting(CHAOS_SEED) or random.randrange(1, 1_000_000))
    print(f"\n[chaos] {request.node.nodeid}: seed {value} "
          f"(replay with DELTASINK_CHAOS_SEED={value})")
    return value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    seed_value = getattr(item, "funcargs", {}).get("seed")
    if report.failed and seed_value is not None:
        report.sections.append(("chaos seed", f"DELTASINK_CHAOS_SEED={seed_value}"))


def record(scenario: str, profile: Profile, verdict: Verdict | None, note: str = "") -> None:
    """Add a row to the verdict table."""
    RESULTS.append((scenario, profile.name, verdict, note))


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("deltasink chaos verdicts")
    head = (f"{'scenario':<46} {'profile':<7} {'lost':>5} {'dup':>5} {'unexp':>6} "
            f"{'quar.lost':>9} {'quar.dup':>8}  note")
    tr.write_line(head)
    tr.write_line("-" * len(head))
    for scenario, profile, v, note in RESULTS:
        if v is None:
            cells = f"{'-':>5} {'-':>5} {'-':>6} {'-':>9} {'-':>8}"
        else:
            cells = (f"{v.lost:>5} {v.duplicated:>5} {v.unexpected:>6} "
                     f"{v.quarantine_lost:>9} {v.quarantine_duplicated:>8}")
        tr.write_line(f"{scenario:<46} {profile:<7} {cells}  {note}")
    bad = [r for r in RESULTS if r[2] is not None and not r[2].clean]
    tr.write_line(f"{len(RESULTS)} rows, {'all zero' if not bad else f'{len(bad)} NOT CLEAN'}")


@pytest.fixture
def topic() -> str:
    return f"chaos-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def _file_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    node = EmbeddedBroker.at(tmp_path_factory.mktemp("own-broker"),
                             port=free_port_pair()).start(timeout=120)
    yield node
    node.resume()
    node.stop()


@pytest.fixture
def own_broker(_file_broker: EmbeddedBroker) -> Iterator[EmbeddedBroker]:
    """A broker of this file's tests only, so that pausing or killing it disturbs no other
    file's test. The file's tests take turns on it (a file runs on one worker, one test after
    another): one broker start per file, not one per test. Each test gets it running (started
    again if a failed test left it killed) and leaves it thawed."""
    _file_broker.resume()
    _file_broker.start(timeout=120)  # a no-op when it runs
    yield _file_broker
    _file_broker.resume()
