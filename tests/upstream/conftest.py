"""Fixtures for the upstream tests: the local GitHub-like server, a fake clock, an index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reporter.upstream.index import Index

from .ghserver import GitHubServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ISSUES = ROOT / "fixtures" / "github" / "issues.jsonl"
TP_DESYNC = ROOT / "fixtures" / "bundles" / "tp_desync"


class FakeClock:
    """A clock that never waits: `sleep` records the seconds and moves `now` forward.

    `random` draws 0.0, which takes no jitter off a backoff and adds none to a rate-limit
    wait, so tests see the policy's plain schedule (tests/upstream/test_policy.py checks
    the jitter bounds with other draws)."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.time = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds

    def random(self) -> float:
        return 0.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ghserver() -> Iterator[GitHubServer]:
    """A GitHub-like server on 127.0.0.1, stopped after the test."""
    server = GitHubServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    """An empty index in a temporary folder."""
    with Index(tmp_path / "index.sqlite3") as opened:
        yield opened


@pytest.fixture(scope="session")
def example_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """The example issues of fixtures/github, imported once per session."""
    path = tmp_path_factory.mktemp("example") / "example.sqlite3"
    with Index(path) as opened:
        result = opened.import_jsonl(
            EXAMPLE_ISSUES.read_text(encoding="utf-8").splitlines(), source="issues.jsonl"
        )
        assert result.skipped == ()
        yield opened
