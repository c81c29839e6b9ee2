"""The online wedge detector (`analysis/online.py`) and the poller's URL handling.

Scrape texts are generated here (edge cases: a quiet service, a stall shorter than the
window, a recovery); the real server runs in `test_watch_cli.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reporter.analysis import online
from reporter.collect.watch import is_query_range, split_query
from reporter.core.errors import UsageError
from reporter.load import bundle as bundle_io
from reporter.model import WedgeSettings

T0 = datetime(2026, 12, 7, 13, 0, 0, tzinfo=UTC)
SETTINGS = WedgeSettings(window_seconds=3.0)


def _scrape(tokens: float, running: int, queue: int) -> str:
    return (
        "# HELP sglang:generation_tokens_total Generated tokens.\n"
        "# TYPE sglang:generation_tokens_total counter\n"
        f'sglang:generation_tokens_total{{tp_rank="0"}} {tokens}\n'
        f"sglang:num_running_reqs {running}\n"
        f"sglang:num_queue_reqs {queue}\n"
        "sglang:unrelated_gauge 7\n"
        "# TYPE python_gc_objects_collected_total counter\n"
        "python_gc_objects_collected_total 12\n"
    )


def _run(rows: list[tuple[float, int, int]], every: float = 0.5) -> list[online.Decision]:
    relevant = online.Relevant.of(SETTINGS)
    ring = online.Ring(keep=60)
    out = []
    for index, (tokens, running, queue) in enumerate(rows):
        at = T0 + timedelta(seconds=every * index)
        ring.add(online.sample(at, _scrape(tokens, running, queue), relevant, source="t"))
        out.append(online.judge(ring.series(), at=at, settings=SETTINGS, samples=len(ring.samples)))
    return out


def _wedge_rows() -> list[tuple[float, int, int]]:
    rows = [(100.0 * i, 4, 2) for i in range(6)]
    return rows + [(500.0, 4, 2 + i) for i in range(1, 10)]


def test_a_wedge_is_found_after_the_window_with_its_numbers() -> None:
    decisions = _run(_wedge_rows())
    states = [d.state for d in decisions]
    assert states[0] is online.State.NO_DATA
    assert states[1:6] == [online.State.WORKING] * 5
    first = states.index(online.State.WEDGED)
    assert set(states[6:first]) == {online.State.STALLING}
    wedged = decisions[first]
    # The counter last moved in the interval ending at sample 5 (2.5 s): the stretch
    # starts there, and the window is reached 3 s later.
    assert wedged.onset == T0 + timedelta(seconds=2.5)
    assert wedged.at == T0 + timedelta(seconds=5.5)
    assert wedged.stalled_for == 3.0 and wedged.output == 0
    assert wedged.waiting == 4 + 8
    assert dict(wedged.parts) == {
        "sglang:generation_tokens_total": 0.0,
        "sglang:num_running_reqs": 4.0,
        "sglang:num_queue_reqs": 8.0,
    }
    assert wedged.text == (
        "wedged: output 0/s (sglang:generation_tokens_total) for 3.0 s >= 3 s while 12 wait "
        "(sglang:num_running_reqs 4, sglang:num_queue_reqs 8); onset 2026-12-07T13:00:02.500Z"
    )


def test_a_quiet_service_is_never_a_wedge() -> None:
    decisions = _run([(500.0, 0, 0)] * 20)
    assert {d.state for d in decisions[1:]} == {online.State.QUIET}
    assert "idle, not a wedge" in decisions[-1].text


def test_a_short_stall_that_recovers_is_not_a_wedge() -> None:
    rows = [(100.0 * i, 4, 2) for i in range(6)]
    rows += [(500.0, 4, 3)] * 4  # 2 s flat, under the 3 s window
    rows += [(500.0 + 100.0 * i, 4, 2) for i in range(1, 6)]
    states = [d.state for d in _run(rows)]
    assert online.State.STALLING in states and online.State.WEDGED not in states
    assert states[-1] is online.State.WORKING


def test_without_the_signals_it_says_no_data() -> None:
    relevant = online.Relevant.of(SETTINGS)
    ring = online.Ring(keep=60)
    for i in range(4):
        ring.add(online.sample(T0 + timedelta(seconds=i), "other_metric 1\n", relevant, source="t"))
    decision = online.judge(ring.series(), at=T0, settings=SETTINGS, samples=4)
    assert decision.state is online.State.NO_DATA


def test_the_ring_keeps_only_the_recent_span_and_the_relevant_lines() -> None:
    relevant = online.Relevant.of(SETTINGS)
    ring = online.Ring(keep=2.0)
    for i in range(10):
        ring.add(online.sample(T0 + timedelta(seconds=i), _scrape(i, 1, 1), relevant, source="t"))
    assert [s.at for s in ring.samples] == [T0 + timedelta(seconds=s) for s in (7, 8, 9)]
    assert "unrelated" not in ring.samples[0].text and "python_gc" not in ring.samples[0].text
    assert "# TYPE sglang:generation_tokens_total counter" in ring.samples[0].text


def test_the_history_file_loads_with_the_same_onset(tmp_path: Path) -> None:
    """The ring written as a bundle file: the loader and `analyze` see the watcher's wedge."""
    relevant = online.Relevant.of(SETTINGS)
    ring = online.Ring(keep=60)
    for index, row in enumerate(_wedge_rows()):
        ring.add(
            online.sample(T0 + timedelta(seconds=0.5 * index), _scrape(*row), relevant, source="t")
        )
    decision = online.judge(ring.series(), at=T0, settings=SETTINGS, samples=len(ring.samples))
    folder = tmp_path / "bundle"
    (folder / "metrics").mkdir(parents=True)
    (folder / "metrics" / "watch-history-1.prom").write_text(ring.history())
    (folder / "bundle.toml").write_text('[wedge]\nwindow = "3s"\n')
    loaded = bundle_io.load([folder])
    from reporter.analysis import wedge

    found = wedge.detect(loaded.series, loaded.manifest.wedge)
    assert found is not None and found.episode is not None
    assert found.episode.onset == decision.onset


def test_health_decision_needs_the_whole_window() -> None:
    args = {"window": 3.0, "deadline": 1.0, "url": "http://h/health"}
    assert online.health_decision(at=T0, hung_since=None, **args) is None  # type: ignore[arg-type]
    early = T0 + timedelta(seconds=2)
    assert online.health_decision(at=early, hung_since=T0, **args) is None  # type: ignore[arg-type]
    late = online.health_decision(at=T0 + timedelta(seconds=3.5), hung_since=T0, **args)  # type: ignore[arg-type]
    assert late is not None and late.wedged and late.onset == T0
    assert "hung past its 1 s deadline, for 3.5 s >= 3 s" in late.text


def test_query_range_urls() -> None:
    url = "http://prom:9090/api/v1/query_range?query=sum(sglang:num_queue_reqs)"
    assert is_query_range(url) and not is_query_range("http://h:30000/metrics")
    assert split_query(url) == ("http://prom:9090/api/v1/query_range", "sum(sglang:num_queue_reqs)")
    with pytest.raises(UsageError, match="needs its query"):
        split_query("http://prom:9090/api/v1/query_range")


def test_a_query_range_source_decides_from_prometheus_history() -> None:
    """A `query_range` URL: each poll asks for the last `keep` seconds; the answer decides."""
    import httpx

    from reporter.collect.httpread import Limits
    from reporter.collect.watch import Poller

    asked: list[httpx.Request] = []
    now = T0 + timedelta(seconds=30)

    def matrix(name: str, values: list[tuple[float, float]]) -> dict[str, object]:
        return {"metric": {"__name__": name}, "values": [[t, str(v)] for t, v in values]}

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        start = T0.timestamp()
        tokens = [(start + i, min(i, 20) * 100.0) for i in range(31)]
        queue = [(start + i, 3.0 + max(0, i - 20)) for i in range(31)]
        series = [
            matrix("sglang:generation_tokens_total", tokens),
            matrix("sglang:num_queue_reqs", queue),
        ]
        body = {"status": "success", "data": {"resultType": "matrix", "result": series}}
        return httpx.Response(200, json=body)

    url = "http://prom:9090/api/v1/query_range?query=%7B__name__%3D~%22sglang%3A.%2A%22%7D"
    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        poller = Poller(
            client=client,
            urls=(url,),
            settings=WedgeSettings(window_seconds=5.0),
            every=1.0,
            keep=300.0,
            limits=Limits(5.0, 1 << 20),
            now=lambda: now,
        )
        seen = poller.poll()
    ((_, decision),) = seen.decisions
    assert decision.state is online.State.WEDGED
    assert decision.onset == T0 + timedelta(seconds=20)
    assert decision.stalled_for == 10.0 and decision.waiting == 13.0
    params = asked[0].url.params
    assert params["query"] == '{__name__=~"sglang:.*"}'
    assert float(params["end"]) == now.timestamp()
    assert float(params["start"]) == now.timestamp() - 300
    assert poller.history()[0][0] == "metrics/watch-history-1.json"
