"""The I/O of one `report watch` poll: scrape, probe, find the targets; decide with `analysis.online`.

Every read is one bounded request through `httpread.fetch` (one deadline for the
whole request, a size cap after decoding, the stop switch honoured at once), and the
only URLs asked are the ones named: the metrics URLs (a `/metrics` page, or a
Prometheus `query_range` URL with its `query=`) and the health route. Nothing else of
the serving path is touched. The targets (`--match`, `--pid`, `--children-of`) are
looked up again in `/proc` at every poll, so a restarted service (new PIDs) is followed;
with `--ssh`/`--exec` the hosts are asked only at capture time.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx

from reporter.analysis import online
from reporter.analysis.wedge import DEFAULT_WINDOW
from reporter.collect import plan, procfs
from reporter.collect.httpread import Limits, fetch
from reporter.collect.scrape import fetch_query_range, scrape_once
from reporter.core.errors import UsageError
from reporter.evidence import metrics
from reporter.model import WedgeSettings


def is_query_range(url: str) -> bool:
    """True for a Prometheus `query_range` URL (its path ends in /api/v1/query_range)."""
    return urllib.parse.urlsplit(url).path.rstrip("/").endswith("/api/v1/query_range")


def split_query(url: str) -> tuple[str, str]:
    """(endpoint, PromQL) of a `query_range` URL; `UsageError` without a `query=`."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query).get("query", [""])[0]
    if not query:
        raise UsageError(
            f"--metrics-url {url}: a query_range URL needs its query",
            tip="add ?query=... (URL-encoded PromQL), e.g. "
            "'.../api/v1/query_range?query=sglang:num_queue_reqs'",
        )
    return urllib.parse.urlunsplit((*parts[:3], "", "")), query


@dataclass(slots=True)
class Source:
    """One metrics URL and what the watcher keeps of it."""

    url: str
    ring: online.Ring
    query: str = ""
    """The PromQL of a query_range URL ("" for a /metrics page)."""
    endpoint: str = ""
    answer: str = ""
    """The last query_range answer as sent (the history file of a query_range source)."""
    error: str = ""
    decision: online.Decision | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What one poll saw: a decision per metrics URL, the health probe, the targets."""

    at: datetime
    decisions: tuple[tuple[str, online.Decision], ...]
    errors: tuple[str, ...] = ()
    health: online.Decision | None = None
    health_text: str = ""
    targets: tuple[int, ...] | None = None
    """The PIDs found now (None: not looked up, e.g. remote hosts only)."""

    @property
    def wedged(self) -> tuple[online.Trigger, online.Decision] | None:
        """The first decision that says wedged, with its trigger; None when none does."""
        for _, decision in self.decisions:
            if decision.wedged:
                return online.Trigger.METRICS, decision
        if self.health is not None and self.health.wedged:
            return online.Trigger.HEALTH, self.health
        return None


@dataclass(slots=True)
class Poller:
    """The watcher's senses: the metrics rings, the health probe state, the target lookup."""

    client: httpx.Client
    urls: tuple[str, ...]
    settings: WedgeSettings
    every: float
    keep: float
    limits: Limits
    health_url: str | None = None
    health_limits: Limits | None = None
    targets: plan.CollectRequest | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    now: Callable[[], datetime] = lambda: datetime.now(tz=UTC)
    sources: list[Source] = field(default_factory=list)
    hung_since: datetime | None = None
    relevant: online.Relevant = field(init=False)

    def __post_init__(self) -> None:
        self.relevant = online.Relevant.of(self.settings)
        for url in self.urls:
            source = Source(url=url, ring=online.Ring(keep=self.keep))
            if is_query_range(url):
                source.endpoint, source.query = split_query(url)
            self.sources.append(source)

    def poll(self) -> Observation:
        """One round: every metrics URL, the health route, the targets."""
        at = self.now()
        errors: list[str] = []
        decisions: list[tuple[str, online.Decision]] = []
        for source in self.sources:
            self._read(source, at)
            if source.error:
                errors.append(f"{source.url}: {source.error}")
            series = (
                source.ring.series()
                if not source.query
                else metrics.finish(
                    metrics.parse_query_range(source.answer, source="watch").series
                )[0]
                if source.answer
                else ()
            )
            samples = (
                len(source.ring.samples)
                if not source.query
                else len({p.at for s in series for p in s.points})
            )
            source.decision = online.judge(series, at=at, settings=self.settings, samples=samples)
            decisions.append((source.url, source.decision))
        health, health_text = self._probe()
        return Observation(
            at=at,
            decisions=tuple(decisions),
            errors=tuple(errors),
            health=health,
            health_text=health_text,
            targets=self._targets(),
        )

    def _read(self, source: Source, at: datetime) -> None:
        if source.query:
            got = fetch_query_range(
                self.client,
                source.endpoint,
                source.query,
                start=at - timedelta(seconds=self.keep),
                end=at,
                step=max(self.every, 1.0),
                limits=self.limits,
                stop=self.stop,
            )
            source.error = got.error
            if not got.error:
                source.answer = got.text
            return
        result = scrape_once(self.client, source.url, limits=self.limits, stop=self.stop)
        source.error = result.error
        if not result.error:
            source.ring.add(online.sample(result.at, result.text, self.relevant, source="watch"))

    def _probe(self) -> tuple[online.Decision | None, str]:
        """GET the health route once; a probe that hangs past its deadline counts."""
        if self.health_url is None or self.health_limits is None:
            return None, ""
        started = self.now()
        request = self.client.build_request("GET", self.health_url)
        answer = fetch(
            self.client,
            request,
            limits=self.health_limits,
            stop=self.stop,
            what="the health answer",
        )
        if self.stop.is_set():
            return None, "interrupted"
        hung = bool(answer.error) and answer.error.startswith("no complete answer within")
        if hung:
            self.hung_since = self.hung_since or started
            text = f"health: {self.health_url} hung past {self.health_limits.deadline:g} s"
        else:
            self.hung_since = None
            text = (
                f"health: {self.health_url} {answer.error}"
                if answer.error
                else f"health: {self.health_url} HTTP {answer.status} in {answer.seconds:.2f} s"
            )
        decision = online.health_decision(
            at=self.now(),
            hung_since=self.hung_since,
            window=self.settings.window_seconds or DEFAULT_WINDOW,
            deadline=self.health_limits.deadline,
            url=self.health_url,
        )
        return decision, text

    def _targets(self) -> tuple[int, ...] | None:
        """The local targets now (PIDs change when the service restarts)."""
        request = self.targets
        if request is None or request.remote is not None or not request.wants_processes:
            return None
        try:
            selection = plan.select_targets(
                procfs.list_processes(),
                request,
                own_pid=os.getpid(),
                is_python=lambda _: None,
            )
        except UsageError:
            return ()  # a --pid or --children-of PID is gone: nothing to capture now
        return tuple(t.process.pid for t in selection.targets)

    def history(self) -> list[tuple[str, str]]:
        """(file name, text) of each source's history, for the capture bundle."""
        out: list[tuple[str, str]] = []
        for index, source in enumerate(self.sources, start=1):
            if source.query and source.answer:
                out.append((f"metrics/watch-history-{index}.json", source.answer))
            elif source.ring.samples:
                out.append((f"metrics/watch-history-{index}.prom", source.ring.history()))
        return out
