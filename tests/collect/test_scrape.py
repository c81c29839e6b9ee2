"""Scrapes and query_range over httpx (MockTransport); the saved form reads back as metrics."""

from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from reporter.collect import scrape
from reporter.collect.httpread import Limits
from reporter.evidence import metrics

AT = datetime(2026, 11, 29, 14, 43, 41, 973000, tzinfo=UTC)
BODY = (
    "# HELP sglang:num_running_reqs The number of running requests.\n"
    "# TYPE sglang:num_running_reqs gauge\n"
    'sglang:num_running_reqs{tp_rank="0"} 12.0\n'
)


def test_blocks_read_back_as_a_series() -> None:
    text = scrape.scrape_block(AT, BODY) + scrape.scrape_block(
        AT + timedelta(seconds=1), BODY.rstrip("\n")
    )
    assert text.startswith("# scrape at 2026-11-29T14:43:41.973Z\n# HELP")
    parsed = metrics.parse_text(text, source="metrics/scrapes.prom")
    assert parsed.warnings == ()
    (series,) = parsed.series
    assert series.name == "sglang:num_running_reqs"
    assert [p.at for p in series.points] == [AT, AT + timedelta(seconds=1)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (BODY, True),
        ("up 1\n", True),
        ("\n\nprocess_cpu_seconds_total 1.5\n", True),
        ("<html><body>login</body></html>", False),
        ('{"status": "success"}', False),
        ("", False),
        ("just words here", True),  # shaped like a sample; the parser will warn
        ("404", False),
    ],
)
def test_looks_like_exposition(body: str, expected: bool) -> None:
    assert scrape.looks_like_exposition(body) is expected


def _client(handler: httpx.MockTransport) -> httpx.Client:
    return httpx.Client(transport=handler)


def test_scrape_once_outcomes() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/metrics":
            return httpx.Response(200, text=BODY)
        if request.url.path == "/html":
            return httpx.Response(200, text="<html/>", headers={"content-type": "text/html"})
        if request.url.path == "/slow":
            raise httpx.ReadTimeout("slow", request=request)
        if request.url.path == "/down":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(503)

    with _client(httpx.MockTransport(handler)) as client:
        ok = scrape.scrape_once(client, "http://h/metrics", limits=Limits(1, 1 << 20))
        assert ok.text == BODY and ok.error == ""
        assert (
            scrape.scrape_once(client, "http://h/html", limits=Limits(1, 1 << 20)).error
            == "not Prometheus text (text/html)"
        )
        assert scrape.scrape_once(
            client, "http://h/slow", limits=Limits(1, 1 << 20)
        ).error.startswith("no complete answer within 1 s")
        assert scrape.scrape_once(
            client, "http://h/down", limits=Limits(1, 1 << 20)
        ).error.startswith("ConnectError")
        assert (
            scrape.scrape_once(client, "http://h/other", limits=Limits(1, 1 << 20)).error
            == "HTTP 503"
        )
    assert all(r.method == "GET" for r in seen)
    assert seen[0].headers["accept"].startswith("text/plain;version=0.0.4")


def test_scrape_loop_counts_and_stops() -> None:
    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200, text=BODY)

    results: list[scrape.ScrapeResult] = []
    stop = threading.Event()
    with _client(httpx.MockTransport(handler)) as client:
        # every=0: no slot can be missed, so the count is exact on any machine.
        n = scrape.scrape_loop(
            client,
            "http://h/metrics",
            every=0,
            count=4,
            limits=Limits(1, 1 << 20),
            stop=stop,
            on_result=results.append,
        )
        assert n == 4 and len(results) == 4 and len(calls) == 4
        assert [r.at for r in results] == sorted(r.at for r in results)
        stop.set()
        assert (
            scrape.scrape_loop(
                client,
                "http://h/metrics",
                every=0.01,
                count=4,
                limits=Limits(1, 1 << 20),
                stop=stop,
                on_result=results.append,
            )
            == 0
        )


def test_a_slow_scrape_skips_the_slots_it_missed_instead_of_bursting() -> None:
    """The first answer takes three intervals: the slots it overran are skipped, not caught up."""
    starts: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        starts.append(time.monotonic())
        if len(starts) == 1:
            time.sleep(0.3)
        return httpx.Response(200, text=BODY)

    with _client(httpx.MockTransport(handler)) as client:
        n = scrape.scrape_loop(
            client,
            "http://h/metrics",
            every=0.1,
            count=5,
            limits=Limits(1, 1 << 20),
            stop=threading.Event(),
            on_result=lambda _result: None,
        )
    # Slots at 0.1, 0.2 and 0.3 s fall inside the slow first answer and are never scraped
    # (a loop that caught up would scrape all five).
    assert n == len(starts) <= 2
    # No burst: after the slow answer the next scrape waits for its own slot.
    assert all(b - a >= 0.1 - 0.005 for a, b in itertools.pairwise(starts))


def _matrix(name: str) -> str:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [{"metric": {"__name__": name}, "values": [[1764427421, "3"]]}],
            },
        }
    )


def test_fetch_query_range() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.method == "POST":
            return httpx.Response(200, text=_matrix("long"))
        query = request.url.params["query"]
        if query == "bad(":
            return httpx.Response(
                400, json={"status": "error", "errorType": "bad_data", "error": "parse error"}
            )
        if query == "none":
            return httpx.Response(
                200, json={"status": "success", "data": {"resultType": "matrix", "result": []}}
            )
        if query == "proxy":
            return httpx.Response(502, text="<html>bad gateway</html>")
        return httpx.Response(200, text=_matrix(query))

    start, end = AT - timedelta(hours=1), AT
    with _client(httpx.MockTransport(handler)) as client:

        def ask(query: str) -> scrape.QueryAnswer:
            return scrape.fetch_query_range(
                client,
                "http://prom:9090/",
                query,
                start=start,
                end=end,
                step=4,
                limits=Limits(5, 1 << 20),
            )

        good = ask("sglang:num_queue_reqs")
        assert good.error == "" and json.loads(good.text)["status"] == "success"
        assert requests[0].url.path == "/api/v1/query_range"
        assert requests[0].url.params["step"] == "4s"
        assert float(requests[0].url.params["end"]) - float(requests[0].url.params["start"]) == 3600
        assert ask("bad(").error == "Prometheus answered bad_data: parse error"
        assert ask("none").error == "no series in range (the query matched nothing)"
        assert ask("proxy").error == "HTTP 502"
        long_query = "sum(" + " + ".join(f'x{{i="{i}"}}' for i in range(300)) + ")"
        assert ask(long_query).error == ""
        assert requests[-1].method == "POST"
        assert b"query=" in requests[-1].content


def test_query_range_url() -> None:
    assert scrape.query_range_url("http://prom:9090") == "http://prom:9090/api/v1/query_range"
    assert (
        scrape.query_range_url("http://g/api/datasources/proxy/1/")
        == "http://g/api/datasources/proxy/1/api/v1/query_range"
    )
    assert (
        scrape.query_range_url("http://prom/api/v1/query_range") == "http://prom/api/v1/query_range"
    )
