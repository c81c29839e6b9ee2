"""Metric history parsers (text scrapes, query_range JSON, Grafana CSV) and `finish`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.evidence import metrics
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, ParseResult

T0 = datetime(2026, 11, 29, 14, 40, tzinfo=UTC)
T0_S = T0.timestamp()


def _names(result: ParseResult) -> list[str]:
    return [s.display() for s in result.series]


def _warned(result: ParseResult | tuple[object, ...], *needles: str) -> None:
    warnings = result.warnings if isinstance(result, ParseResult) else result
    text = "\n".join(str(w) for w in warnings)
    for needle in needles:
        assert needle in text, text


# ---------------------------------------------------------------------------- text exposition

SCRAPES = """\
# scrape at 2026-11-29T14:40:00Z
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{tp_rank="0",model_name="q"} 3.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="q"} 100.0
# TYPE sglang:generation_tokens_created gauge
sglang:generation_tokens_created{model_name="q"} 1.7e+09
# TYPE sglang:ttft_seconds histogram
sglang:ttft_seconds_bucket{le="0.1",model_name="q"} 1.0
sglang:ttft_seconds_sum{model_name="q"} 0.2
sglang:ttft_seconds_count{model_name="q"} 1.0
# scrape at 2026-11-29T14:40:01.500Z
sglang:num_running_reqs{tp_rank="0",model_name="q"} 4.0
sglang:generation_tokens_total{model_name="q"} 250.0
"""


def test_text_scrapes_with_markers_keep_labels_types_and_lines() -> None:
    result = metrics.parse_text(SCRAPES, source="m.prom")
    assert not result.warnings
    by_name = {s.name: s for s in result.series}
    assert sorted(by_name) == [
        "sglang:generation_tokens_total",
        "sglang:num_running_reqs",
        "sglang:ttft_seconds_count",
        "sglang:ttft_seconds_sum",
    ]
    running = by_name["sglang:num_running_reqs"]
    assert running.kind is MetricKind.GAUGE
    assert running.labels == (("model_name", "q"), ("tp_rank", "0"))
    assert [(p.at, p.value, p.source.line) for p in running.points] == [
        (T0, 3.0, 4),
        (T0 + timedelta(seconds=1.5), 4.0, 14),
    ]
    assert by_name["sglang:generation_tokens_total"].kind is MetricKind.COUNTER
    assert by_name["sglang:ttft_seconds_count"].kind is MetricKind.COUNTER


@pytest.mark.parametrize(
    ("text", "captured_at", "series", "warnings"),
    [
        ("", None, 0, ["no Prometheus samples found"]),
        ("# only a comment\n", None, 0, ["no Prometheus samples found"]),
        ("this is not { a metric\n", None, 0, ["not understood as a Prometheus sample"]),
        ('foo{a="1" 2\n', T0, 0, ["not understood as a Prometheus sample"]),
        ("foo 1\n", None, 0, ["1 samples have no time"]),
        ("foo 1\n", T0, 1, []),
        ("foo 1 1764427200000\n", None, 1, []),
        ("foo 1 5\n", None, 0, ["outside 2000-2100"]),
        ("# scrape at yesterday\nfoo 1\n", None, 0, ["unreadable time", "have no time"]),
        (
            "# scrape at 2026-11-29T14:40:00Z\nfoo abc\nbar 2\n",
            None,
            1,
            [":2: line not understood"],
        ),
        ("# scrape at 2026-11-29T14:40:00Z\nfoo NaN\nbar +Inf\n", None, 2, []),
        ('# scrape at 2026-11-29T14:40:00Z\nx_created 1.7e9\nx_bucket{le="1"} 3\n', None, 1, []),
    ],
)
def test_text_table(
    text: str, captured_at: datetime | None, series: int, warnings: list[str]
) -> None:
    result = metrics.parse_text(text, source="m.prom", captured_at=captured_at)
    assert len(result.series) == series, _names(result)
    _warned(result, *warnings)
    if not warnings:
        assert not result.warnings


def test_text_sample_timestamp_wins_over_marker() -> None:
    text = f"# scrape at 2026-11-29T14:40:00Z\nfoo 1 {(T0_S + 60) * 1000:.0f}\n"
    (series,) = metrics.parse_text(text, source="m.prom").series
    assert series.points[0].at == datetime(2026, 11, 29, 14, 41, tzinfo=UTC)


def test_text_label_escapes_are_decoded() -> None:
    text = 'foo{path="C:\\\\dir",q="say \\"hi\\""} 1\n'
    (series,) = metrics.parse_text(text, source="m.prom", captured_at=T0).series
    assert dict(series.labels) == {"path": "C:\\dir", "q": 'say "hi"'}


def test_text_real_prometheus_client_sample(prometheus_samples: Path) -> None:
    (path,) = prometheus_samples.glob("prometheus_client-*_generate_latest_sglang-like.txt")
    result = metrics.parse_text(path.read_text(encoding="utf-8"), source=path.name, captured_at=T0)
    assert not result.warnings
    # `_created` and `_bucket` are dropped; the histogram keeps `_count` and `_sum`.
    assert sorted(s.name for s in result.series) == [
        "sglang:num_bootstrap_failed_reqs_total",
        "sglang:num_running_reqs",
        "sglang:time_to_first_token_seconds_count",
        "sglang:time_to_first_token_seconds_sum",
    ]


def test_many_bad_lines_are_capped() -> None:
    text = "\n".join(f"bad{{ {i}" if i % 2 else "# x" for i in range(200)) + "\n"
    result = metrics.parse_text(text, source="m.prom", captured_at=T0)
    assert len(result.warnings) == metrics.MAX_WARNINGS_PER_FILE + 1
    _warned(result, "more problems in this file not listed")


# ---------------------------------------------------------------------------- query_range

MATRIX = (
    '{"status":"success","data":{"resultType":"matrix","result":[\n'
    '{"metric":{"__name__":"sglang:num_queue_reqs","instance":"h:1","job":"sglang"},'
    f'"values":[[{T0_S},"1"],[{T0_S + 15},"3"],[{T0_S + 30},"NaN"]]}},\n'
    '{"metric":{"__name__":"sglang:generation_tokens_total"},'
    f'"values":[[{T0_S},"10"],[{T0_S + 15},"40"]]}}\n'
    "]}}\n"
)


def test_query_range_matrix() -> None:
    result = metrics.parse_query_range(MATRIX, source="q.json")
    assert not result.warnings
    queue, tokens = sorted(result.series, key=lambda s: s.name, reverse=True)
    assert queue.labels == (("instance", "h:1"), ("job", "sglang"))
    assert [p.value for p in queue.points][:2] == [1.0, 3.0]
    assert queue.source.line == 2 and tokens.source.line == 3
    assert tokens.kind is MetricKind.COUNTER


@pytest.mark.parametrize(
    ("text", "series", "warnings"),
    [
        ("", 0, ["not valid JSON"]),
        ("garbage", 0, ["not valid JSON"]),
        (MATRIX[:120], 0, ["not valid JSON", "truncated"]),
        ("[1, 2]", 0, ["not a Prometheus API answer"]),
        (
            '{"status":"error","errorType":"bad_data","error":"parse error"}',
            0,
            ["bad_data: parse error"],
        ),
        ('{"status":"success"}', 0, ["no `data` object"]),
        ('{"status":"success","data":{"resultType":"string","result":[1,"x"]}}', 0, ["'string'"]),
        (
            '{"data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},'
            f'"values":[[{T0_S},"abc"],["when","1"],[{T0_S + 1},"2"]]}}]}}}}',
            1,
            ["x: 2 samples with a bad time or non-numeric value"],
        ),
        (
            # Milliseconds where seconds belong are read as milliseconds.
            '{"data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},'
            f'"values":[[{T0_S * 1000:.0f},"1"]]}}]}}}}',
            1,
            [],
        ),
        (
            '{"data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},'
            '"values":[[99999999999999999999,"1"]]}]}}',
            1 - 1,
            ["1 samples with a bad time"],
        ),
        ('{"data":{"resultType":"matrix","result":["nope"]}}', 0, ["not an object with `metric`"]),
        (
            '{"data":{"resultType":"matrix","result":[{"metric":{"__name__":"h"},"histograms":[]}]}}',
            0,
            ["native histogram"],
        ),
        (
            '{"status":"success","warnings":["too many"],"data":{"resultType":"vector",'
            f'"result":[{{"metric":{{"__name__":"x"}},"value":[{T0_S},"1"]}}]}}}}',
            1,
            ["Prometheus said: too many"],
        ),
        (
            f'{{"data":{{"resultType":"scalar","result":[{T0_S},"7"]}}}}',
            1,
            ["without __name__", "named 'q'"],
        ),
    ],
)
def test_query_range_table(text: str, series: int, warnings: list[str]) -> None:
    result = metrics.parse_query_range(text, source="q.json")
    assert len(result.series) == series, _names(result)
    _warned(result, *warnings)
    if not warnings:
        assert not result.warnings


def test_query_range_rate_answer_is_named_after_the_file_and_stays_a_gauge() -> None:
    text = (
        '{"data":{"resultType":"matrix","result":[{"metric":{"model_name":"q"},'
        f'"values":[[{T0_S},"12.5"]]}}]}}}}'
    )
    (series,) = metrics.parse_query_range(text, source="dir/gen_rate.json").series
    assert series.name == "gen_rate" and series.kind is MetricKind.GAUGE


# ---------------------------------------------------------------------------- Grafana CSV


def test_csv_wide_with_bom_quotes_and_nulls() -> None:
    text = (
        '\ufeff"Time","sglang:num_queue_reqs{instance=""h:1"", tp_rank=""0""}","running"\r\n'
        f"{T0_S * 1000:.0f},3,8\r\n"
        f"{(T0_S + 15) * 1000:.0f},,8\r\n"
        "\r\n"
    )
    result = metrics.parse_csv(text, source="g.csv")
    assert not result.warnings
    queue = next(s for s in result.series if s.name == "sglang:num_queue_reqs")
    assert queue.labels == (("instance", "h:1"), ("tp_rank", "0"))
    assert [(p.at, p.value) for p in queue.points] == [(T0, 3.0)]
    legend = next(s for s in result.series if s.name == "running")
    assert [p.source.line for p in legend.points] == [2, 3]


@pytest.mark.parametrize(
    ("text", "series", "warnings"),
    [
        ("", 0, ["no rows"]),
        ("\ufeff\r\n\r\n", 0, ["no rows"]),
        ("just words\nmore words\n", 0, ["no time column"]),
        ('"Time"\n2026-11-29 14:40:00,1\n', 0, ["no series column", "2 cells, the header 1"]),
        ("Time,a,b\n2026-11-29 14:40:00,1\n", 1, ["row has 2 cells, the header 3"]),
        ("Time,a\n2026-11-29 14:40:00,lots\n", 0, ["not understood as a number: 'lots'"]),
        ("Time,a\nyesterday,1\n", 0, ["time 'yesterday' not understood"]),
        ("Time,a\n12,1\n", 0, ["time '12' not understood"]),
        ("Time,a\n2026-11-29 14:40:00,1\n", 1, ["1 times carry no zone"]),
        ("Time,a\n2026-11-29T14:40:00Z,1.5 K\n", 1, ["values carry units (e.g. '1.5 K'"]),
        ("sep=;\nTime;a\n2026-11-29T14:40:00Z;2\n", 1, []),
        ("Time\ta\n1764427200,2\n", 0, ["not understood"]),
        (
            '"Series","Time","Value"\n"x{a=""1""}",1764427200000,4\n"x{a=""1""}",bad,5\n',
            1,
            ["time 'bad'"],
        ),
        ('"Series","Time","Value"\n"x"\n', 0, ["row has 1 cells, the header 3; skipped"]),
    ],
)
def test_csv_table(text: str, series: int, warnings: list[str]) -> None:
    result = metrics.parse_csv(text, source="g.csv")
    assert len(result.series) == series, _names(result)
    _warned(result, *warnings)
    if not warnings:
        assert not result.warnings


def test_csv_units_and_percent() -> None:
    text = "Time,a,b\n2026-11-29T14:40:00Z,45%,2 req/s\n"
    values = {s.name: s.points[0].value for s in metrics.parse_csv(text, source="g.csv").series}
    assert values == {"a": 0.45, "b": 2.0}


# ---------------------------------------------------------------------------- finish


def _series(
    name: str,
    values: list[float],
    *,
    kind: MetricKind = MetricKind.GAUGE,
    step: float = 1.0,
    path: str = "m.prom",
    labels: tuple[tuple[str, str], ...] = (),
    times: Sequence[float] | None = None,
) -> MetricSeries:
    offsets = times if times is not None else [i * step for i in range(len(values))]
    points = tuple(
        MetricPoint(at=T0 + timedelta(seconds=t), value=v, source=Location(path=path, line=10 + i))
        for i, (t, v) in enumerate(zip(offsets, values, strict=True))
    )
    return MetricSeries(
        name=name, labels=labels, kind=kind, points=points, source=Location(path=path, line=10)
    )


def test_finish_turns_counters_into_rates_and_notes_resets() -> None:
    counter = _series("tok_total", [0, 10, 30, 5, 15], kind=MetricKind.COUNTER, step=2.0)
    (series,), warnings = metrics.finish([counter])
    assert series.rate and [p.value for p in series.points] == [5.0, 10.0, 2.5, 5.0]
    assert [p.at for p in series.points] == [counter.points[i].at for i in range(1, 5)]
    _warned(warnings, "m.prom:13: tok_total: counter went down 1 time(s)")


@pytest.mark.parametrize(
    ("values", "times", "warnings", "kept"),
    [
        ([1, float("nan"), 3], None, ["m.prom:11: 1 NaN values skipped"], [1, 3]),
        ([1, float("inf"), float("-inf")], None, ["m.prom:11: 2 ±Inf values skipped"], [1]),
        ([1, 2, 3], [0, 2, 1], ["m.prom:12: 1 samples out of time order"], [1, 3, 2]),
        ([1, 2, 2], [0, 1, 1], ["duplicate samples (same series, time and value)"], [1, 2]),
        ([1, 2, 5], [0, 1, 1], ["with another value; kept the later"], [1, 5]),
    ],
)
def test_finish_cleaning_table(
    values: list[float], times: list[float] | None, warnings: list[str], kept: list[float]
) -> None:
    (series,), found = metrics.finish([_series("g", values, times=times)])
    assert [p.value for p in series.points] == kept
    _warned(found, *warnings)


def test_finish_merges_one_file_per_scrape() -> None:
    parts = [
        metrics.parse_text(
            f"foo_total {v}\n", source=f"s{i}.prom", captured_at=T0 + timedelta(seconds=i)
        )
        for i, v in enumerate([1, 4, 9])
    ]
    (series,), warnings = metrics.finish([s for p in parts for s in p.series])
    assert not warnings
    assert [p.value for p in series.points] == [3.0, 5.0]
    assert [p.source.path for p in series.points] == ["s1.prom", "s2.prom"]


def test_finish_notes_gaps_and_mixed_label_sets() -> None:
    a = _series("q", [1.0] * 10, times=[*range(5), *range(30, 35)], labels=(("tp", "0"),))
    b = _series("q", [2.0], times=[0], labels=(("dp", "0"), ("tp", "1")), path="other.prom")
    _, warnings = metrics.finish([a, b])
    _warned(warnings, "no metric samples for 26.0 s", "q comes with 2 label sets")


def test_finish_single_counter_sample_has_no_rate() -> None:
    (series,), warnings = metrics.finish([_series("x_total", [5], kind=MetricKind.COUNTER)])
    assert series.rate and not series.points
    _warned(warnings, "counters with a single sample")


def test_selector_parsing() -> None:
    selector = metrics.parse_selector('x_total{mode="decode", tp="0"}')
    assert selector is not None and str(selector) == 'x_total{mode="decode",tp="0"}'
    assert selector.matches(
        _series("x_total", [1], labels=(("mode", "decode"), ("tp", "0"), ("z", "1")))
    )
    assert not selector.matches(_series("x_total", [1], labels=(("mode", "prefill"),)))
    for bad in ("", "1abc", "x{mode=decode}", "x{", "two words"):
        assert metrics.parse_selector(bad) is None, bad


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsers_never_raise(text: str) -> None:
    for result in (
        metrics.parse_text(text, source="f", captured_at=T0),
        metrics.parse_query_range(text, source="f"),
        metrics.parse_csv(text, source="f"),
    ):
        assert isinstance(result, ParseResult)
    metrics.finish([s for s in metrics.parse_csv(text, source="f").series])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b_total", 'c{x="1"}', 'd{x="\\""}']),
            st.one_of(st.floats(allow_nan=True), st.integers(-5, 5)),
            st.integers(0, 40),
        ),
        max_size=30,
    )
)
def test_text_and_finish_never_raise_on_odd_values(
    samples: list[tuple[str, float, int]],
) -> None:
    text = "".join(
        f"# scrape at 2026-11-29T14:40:{second:02d}Z\n{name} {value}\n"
        for name, value, second in samples
    )
    result = metrics.parse_text(text, source="f")
    series, _ = metrics.finish(result.series)
    for one in series:
        assert all(a.at < b.at for a, b in zip(one.points, one.points[1:], strict=False))
