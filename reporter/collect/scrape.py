"""Metrics over HTTP: scrape a `/metrics` URL on a schedule, fetch Prometheus `query_range`.

The only network code of the collector, and it only sends GET requests to the two
URLs the user named (never to the serving API). The client is injected (tests
pass an `httpx.Client` with a `MockTransport` or point at a local server).

Scrapes go into one file in the form `reporter/evidence/metrics/prometheus.py` reads: each
scrape after a marker with the time the request started::

    # scrape at 2026-11-29T14:43:41.973Z
    # HELP sglang:num_running_reqs The number of running requests.
    ...

A `query_range` answer is saved as the JSON Prometheus sent, when its `status`
is `success`; an error answer is a skip with Prometheus' `errorType` and `error`.
Every request is one bounded read (`httpread.fetch`: a deadline for the whole request,
a size cap after decoding, Ctrl-C honoured at once).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import httpx

from reporter.collect.httpread import Limits, fetch
from reporter.core import inert
from reporter.core.times import iso
from reporter.evidence.metrics import SCRAPE_MARKER

# Ask for the classic text format (not OpenMetrics): it is what the parser reads.
ACCEPT_TEXT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
USER_AGENT = "reporter-collect"
# Longer query URLs go in a POST form body, as the HTTP API allows.
_MAX_GET_URL = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class ScrapeResult:
    """One scrape: when it started, the body on success, else why it failed."""

    at: datetime
    text: str = ""
    error: str = ""


def scrape_block(at: datetime, text: str) -> str:
    """One scrape in the multi-scrape file form: marker line, body, final newline."""
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{SCRAPE_MARKER}{iso(at)}\n{body}"


def looks_like_exposition(text: str) -> bool:
    """True when a body is Prometheus text (comments or `name value` samples), not HTML or JSON."""
    head = text.lstrip()[:4096]
    if not head or head.startswith(("<", "{", "[")):
        return False
    for line in head.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            return True
        name, _, rest = line.partition(" ")
        return bool(rest) and (name[:1].isalpha() or name[:1] in "_:")
    return False


def scrape_once(
    client: httpx.Client, url: str, *, limits: Limits, stop: threading.Event | None = None
) -> ScrapeResult:
    """GET the metrics URL once, within `limits` (one deadline, a size cap)."""
    at = datetime.now(tz=UTC)
    request = client.build_request("GET", url, headers={"Accept": ACCEPT_TEXT})
    answer = fetch(client, request, limits=limits, stop=stop, what="the /metrics answer")
    if answer.error:
        return ScrapeResult(at=at, error=answer.error)
    if answer.status != 200:
        return ScrapeResult(at=at, error=f"HTTP {answer.status}")
    text = answer.text
    if not looks_like_exposition(text):
        kind = answer.headers.get("content-type", "no content type")
        return ScrapeResult(at=at, error=f"not Prometheus text ({inert.one_line(kind, limit=80)})")
    return ScrapeResult(at=at, text=text)


def scrape_loop(
    client: httpx.Client,
    url: str,
    *,
    every: float,
    count: int,
    limits: Limits,
    stop: threading.Event,
    on_result: Callable[[ScrapeResult], None],
) -> int:
    """Scrape `count` times, the k-th at start + k * every; returns the scrapes attempted.

    A slow answer never causes a burst: slots already past are skipped.
    """
    start = time.monotonic()
    attempted = 0
    k = 0
    while k < count and not stop.is_set():
        delay = start + k * every - time.monotonic()
        if delay > 0 and stop.wait(delay):
            break
        result = scrape_once(client, url, limits=limits, stop=stop)
        if stop.is_set() and result.error:
            break  # interrupted mid-answer: not a failed scrape
        on_result(result)
        attempted += 1
        k = max(k + 1, int((time.monotonic() - start) / every) + 1) if every > 0 else k + 1
    return attempted


def query_range_url(base: str) -> str:
    """The endpoint for a Prometheus base URL (a full `.../api/v1/query_range` URL is kept)."""
    trimmed = base.rstrip("/")
    if trimmed.endswith("/api/v1/query_range"):
        return trimmed
    return trimmed + "/api/v1/query_range"


def answer_error(text: str) -> str:
    """Why a query_range answer is unusable ("" when it is a success)."""
    try:
        data = json.loads(text)
    except ValueError:
        return "the answer is not JSON"
    if not isinstance(data, dict):
        return "the answer is not a JSON object"
    if data.get("status") != "success":
        kind = data.get("errorType", "error")
        return f"Prometheus answered {kind}: {data.get('error', 'no message')}"
    result = data.get("data", {}).get("result") if isinstance(data.get("data"), dict) else None
    if not result:
        return "no series in range (the query matched nothing)"
    return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryAnswer:
    """A query_range answer as sent, or why there is none."""

    query: str
    start: datetime
    end: datetime
    step: float
    text: str = ""
    error: str = ""


def fetch_query_range(
    client: httpx.Client,
    base: str,
    query: str,
    *,
    start: datetime,
    end: datetime,
    step: float,
    limits: Limits,
    stop: threading.Event | None = None,
) -> QueryAnswer:
    """Ask Prometheus for `query` over [start, end]; GET, or POST for a long query."""
    url = query_range_url(base)
    params = {
        "query": query,
        "start": f"{start.timestamp():.3f}",
        "end": f"{end.timestamp():.3f}",
        "step": f"{step:g}s",
    }
    answer = QueryAnswer(query=query, start=start, end=end, step=step)
    try:
        request = client.build_request("GET", url, params=params)
        if len(str(request.url)) > _MAX_GET_URL:
            request = client.build_request("POST", url, data=params)
    except httpx.HTTPError as err:
        return replace(answer, error=f"{type(err).__name__}: {err}")
    got = fetch(client, request, limits=limits, stop=stop, what="the query_range answer")
    if got.error:
        return replace(answer, error=got.error)
    text = got.text
    problem = answer_error(text)
    if got.status != 200 and problem in {"", "the answer is not JSON"}:
        problem = f"HTTP {got.status}"
    if problem:
        return replace(answer, error=inert.one_line(problem, limit=300))
    return replace(answer, text=text)


def make_client() -> httpx.Client:
    """The HTTP client for scrapes, queries and debug pages: no redirects, no kept-alive
    connection (each request's socket is its own: `httpread` cuts it at the deadline),
    and only the encodings `httpread` decodes within its cap."""
    return httpx.Client(
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
        follow_redirects=False,
        limits=httpx.Limits(max_connections=4, max_keepalive_connections=0),
        trust_env=True,
    )
