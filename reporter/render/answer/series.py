"""Metric series in the summary: which engine and model stopped, and citations by series and time.

A sample is cited by the series and the time it was taken, with the file it is in:
`metrics/query_range.json: sglang:gen_throughput{engine_type="decode"} at 18:07:30`. A line
number is added only where it points at that sample (a text scrape, a CSV row): every
series of a one-line `query_range` answer sits on line 1. The labels kept in a citation
are the engine's and those that tell the series of one name apart (`tp_rank` when there
are several ranks); the model is named once, in the "What" line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from reporter.core.times import clock
from reporter.model import Bundle, EvidenceKind, Location, MetricSeries

# Labels that say where a series was scraped, not what it measures.
_SCRAPE_LABELS = frozenset({"instance", "job", "__name__"})
# Labels said once on the first screen (the "What" line), never in every citation.
_NAMED_ONCE = frozenset({"model_name", "model"})
# Labels that name the engine (SGLang's prefill/decode split); kept in every citation.
_ENGINE_LABELS = ("engine_type",)


def _of_name(bundle: Bundle, name: str) -> list[MetricSeries]:
    return [s for s in bundle.series if s.name == name]


def _split(series: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """`name{a="1",b="2"}` -> (`name`, (("a", "1"), ("b", "2")))."""
    name, brace, rest = series.partition("{")
    if not brace:
        return series, ()
    pairs: list[tuple[str, str]] = []
    for item in rest.rstrip("}").split('",'):
        key, _, value = item.partition("=")
        if key:
            pairs.append((key.strip(), value.strip().strip('"')))
    return name, tuple(pairs)


def short_series(bundle: Bundle, series: str) -> str:
    """The series with the labels worth printing: the engine's, and those that vary."""
    name, labels = _split(series)
    if not labels:
        return name
    siblings = _of_name(bundle, name)
    varying = {
        key
        for key, _ in labels
        if len({dict(s.labels).get(key) for s in siblings}) > 1 and key not in _SCRAPE_LABELS
    }
    kept = [
        (k, v) for k, v in labels if k not in _NAMED_ONCE and (k in _ENGINE_LABELS or k in varying)
    ]
    if not kept:
        return name
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in kept) + "}"


def _line_points(bundle: Bundle, path: str) -> bool:
    """Whether a line number in `path` points at one sample (not at a whole series)."""
    kind = next((f.kind for f in bundle.files if f.path == path), None)
    return kind is not EvidenceKind.PROMETHEUS_JSON


def cite(bundle: Bundle, source: Location, series: str, at: datetime | None) -> str:
    """`file[:line]: series at HH:MM:SS`, or `file:line` when the series is not known."""
    if not series:
        return str(source)
    where = str(source) if source.line and _line_points(bundle, source.path) else source.path
    when = f" at {clock(at)[:8]}" if at is not None else ""
    return f"{where}: {short_series(bundle, series)}{when}"


def label_values(series: Iterable[MetricSeries], key: str) -> list[str]:
    """The distinct values of one label over `series`, in first-seen order."""
    seen: dict[str, None] = {}
    for item in series:
        value = dict(item.labels).get(key)
        if value:
            seen.setdefault(value, None)
    return list(seen)


def engine_words(bundle: Bundle, names: Sequence[str]) -> str:
    """Which engine and model the series `names` come from: `the decode engine (model
    `qwen`)`, `engines prefill, decode`; "" when their labels do not say."""
    wanted = [s for s in bundle.series if s.name in names]
    engines = label_values(wanted, "engine_type")
    models = label_values(wanted, "model_name") or label_values(wanted, "model")
    parts: list[str] = []
    if len(engines) == 1:
        parts.append(f"the {engines[0]} engine")
    elif engines:
        parts.append(f"the {', '.join(engines)} engines")
    if models:
        listed = ", ".join(f"`{m}`" for m in models[:3])
        parts.append(f"model {listed}" if parts == [] else f"(model {listed})")
    return " ".join(parts)
