"""Fixtures for the upstream tests: the local GitHub-like server, a fake clock, an index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture
def known_fix_search(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The duplicate search finds sgl-project/sglang#4388, fixed in v0.5.3 (#4410), while the
    deployment runs 0.5.2 (no network: `filing.related_issues` is replaced). The fix."""
    from reporter.app import filing
    from reporter.upstream.draft import KnownFix

    fix = KnownFix(
        repo="sgl-project/sglang",
        number=4388,
        url="https://github.com/sgl-project/sglang/issues/4388",
        tag="v0.5.3",
        change="#4410",
        deployed="0.5.2",
        has_fix=False,
    )

    def related(*_args: Any, found: list[KnownFix] | None = None, **_kw: Any) -> Any:
        if found is not None:
            found.append(fix)
        return (), True

    monkeypatch.setattr(filing, "related_issues", related)
    return fix


_OPEN_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Close every client a test made with `client_for` (their sockets would leak into
    later tests)."""
    yield
    while _OPEN_CLIENTS:
        _OPEN_CLIENTS.pop().close()


def client_for(server: GitHubServer, clock: Any, **kwargs: Any) -> Any:
    """A `GitHubClient` for the local server, closed after the test."""
    from reporter.upstream.github import GitHubClient

    client = GitHubClient(base_url=server.url, clock=clock, **kwargs)
    _OPEN_CLIENTS.append(client)
    return client
