"""Wedge detection over metric history: work waiting while output stays at zero.

Input: the bundle's `MetricSeries` (counters already rates) and the manifest's
`[wedge]` settings. Output: a `WedgeReport`, or None when the bundle has no metrics.

Signals have three roles, each a list of metric names (with optional label filters):

* **output**: generation throughput. Counters (`*_generation_tokens_total`, as
  rates) are preferred over gauges when both are present: a stuck scheduler stops
  updating its gauges, so `sglang:gen_throughput` can freeze at its last value
  while the token counter stops moving.
* **waiting**: requests running or queued (also the disaggregation queues).
* **context**: shown and checked for step changes, never decisive (KV usage,
  transfer failures).

Series of one name are summed over their label sets. At every sample time the
output is zero when every output series with a current value reads zero, and work
waits when the waiting series add up to more than zero. A **wedge** is an unbroken
stretch of both that lasts at least `window` (default 60 s; `[wedge] window`).
Times where either side has no current value neither start nor break a stretch.

Onset is the first sample time of the stretch (`onset_after` the last sample
before it, so the true start lies between the two). A counter rate covers the
interval that ends at its time, so a zero rate means no output since the
sample before: the stretch starts there. The end is the first sample where output
comes back or nothing waits; when the data ends first, the report says "still
wedged at the last sample".

Step changes: a waiting or context signal that starts growing linearly (a
non-decreasing run of 8 or more samples over at least half the window, rising on
most steps, a straight-line fit with R² >= 0.9), and
one that freezes at a constant value during the wedge after varying before it.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from reporter.core.times import clock, iso, seconds
from reporter.evidence import metrics
from reporter.evidence.metrics import Gap, Selector
from reporter.model import Location, MetricSeries, WedgeSettings

DEFAULT_OUTPUT = (
    "sglang:generation_tokens_total",
    "vllm:generation_tokens_total",
    "sglang:gen_throughput",
)
DEFAULT_WAITING = (
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:num_grammar_queue_reqs",
    "sglang:num_prefill_prealloc_queue_reqs",
    "sglang:num_prefill_inflight_queue_reqs",
    "sglang:num_decode_prealloc_queue_reqs",
    "sglang:num_decode_transfer_queue_reqs",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
)
DEFAULT_CONTEXT = (
    "sglang:token_usage",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:num_bootstrap_failed_reqs_total",
    "sglang:num_transfer_failed_reqs_total",
)
DEFAULT_WINDOW = 60.0
# A value older than this many of its series' intervals is no longer current.
STALE_INTERVALS = 3.0
# Without an interval (one sample), a value stays current this long (Prometheus' lookback).
STALE_DEFAULT = 300.0
# Linear growth: minimum points, share of rising steps, fit quality, share of the range.
GROWTH_MIN_POINTS = 8
GROWTH_RISING_SHARE = 0.5
GROWTH_MIN_R2 = 0.9
GROWTH_MIN_RISE = 0.1


class Role(StrEnum):
    """What a signal says about a wedge."""

    OUTPUT = "output"
    WAITING = "waiting"
    CONTEXT = "context"


class StepKind(StrEnum):
    """A change in a signal worth a place on the timeline."""

    LINEAR_GROWTH = "linear-growth"
    FROZEN = "frozen"


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One summed value of a signal at one time, with the sample that set it."""

    at: datetime
    value: float
    source: Location
    series: str = ""
    """The series whose sample `source` is (`name{label="v"}`), for a citation that says
    which series and when: a line of a one-line `query_range` answer points nowhere."""
    sampled_at: datetime | None = None
    """The time of that sample (for a counter rate, the sample its interval starts at)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Signal:
    """One metric name (summed over its label sets) in one role.

    `points` are the summed values at the signal's own sample times (for charts);
    `before`, `at_onset` and `last` are None when not known (no wedge, no data).
    """

    name: str
    role: Role
    series: int
    rate: bool
    points: tuple[Point, ...]
    minimum: float
    maximum: float
    before: float | None
    at_onset: float | None
    last: float
    shows_wedge: bool
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StepChange:
    """A step change in one signal: when, what, and the sample it starts at."""

    signal: str
    kind: StepKind
    at: datetime
    text: str
    source: Location
    slope: float | None = None
    series: str = ""
    sampled_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Episode:
    """One stretch of zero output with work waiting that lasted at least the window."""

    onset: datetime
    onset_after: datetime | None
    end: datetime | None
    end_reason: str
    duration: float
    source: Location
    series: str = ""
    """The output series whose sample `source` is (see `Point.series`)."""
    sampled_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WedgeReport:
    """What the metrics say about a wedge; `episode` is the first one, or None.

    `summary` is the verdict paragraph for the report; `notes` say what was missing
    or nearly a wedge.
    """

    episode: Episode | None
    episodes: tuple[Episode, ...]
    window: float
    interval: float | None
    first_sample: datetime
    last_sample: datetime
    signals: tuple[Signal, ...]
    steps: tuple[StepChange, ...]
    gaps: tuple[Gap, ...]
    summary: str
    notes: tuple[str, ...]
    possible: Episode | None = None
    """Zero output with work waiting up to the last sample, shorter than the window."""

    @property
    def found(self) -> bool:
        """True when the metrics show a wedge."""
        return self.episode is not None

    @property
    def still_wedged(self) -> bool:
        """True when the wedge lasts to the last sample."""
        return self.episode is not None and self.episode.end is None


@dataclass(frozen=True, slots=True, kw_only=True)
class _State:
    """A value that holds from `start` to `end` (inclusive), set by the sample at `source`."""

    start: datetime
    end: datetime
    value: float
    source: Location
    series: str = ""


@dataclass(slots=True)
class _Track:
    """The states of one series, by start time."""

    starts: list[datetime]
    states: list[_State]

    def at(self, moment: datetime) -> _State | None:
        index = bisect.bisect_right(self.starts, moment) - 1
        if index < 0:
            return None
        state = self.states[index]
        return state if moment <= state.end else None


def _stale(series: MetricSeries) -> float:
    interval = metrics.median_interval([p.at for p in series.points])
    return STALE_INTERVALS * interval if interval else STALE_DEFAULT


def _track(series: MetricSeries) -> _Track:
    """States of a series: a gauge holds until its next sample (or goes stale); a
    counter rate holds over the interval that ends at its own time."""
    points = series.points
    states: list[_State] = []
    stale = timedelta(seconds=_stale(series))
    name = series.display()
    if series.rate:
        interval = metrics.median_interval([p.at for p in points])
        for index, point in enumerate(points):
            start = points[index - 1].at if index else point.at - timedelta(seconds=interval or 0.0)
            # Cite the sample the interval starts at: from there the counter did not move.
            source = points[index - 1].source if index else point.source
            states.append(
                _State(start=start, end=point.at, value=point.value, source=source, series=name)
            )
    else:
        for index, point in enumerate(points):
            after = points[index + 1].at if index + 1 < len(points) else point.at
            end = min(after, point.at + stale)
            states.append(
                _State(start=point.at, end=end, value=point.value, source=point.source, series=name)
            )
    return _Track(starts=[s.start for s in states], states=states)


def _selectors(names: Sequence[str], defaults: Sequence[str]) -> list[Selector]:
    chosen = names or defaults
    out = []
    for name in chosen:
        selector = metrics.parse_selector(name)
        if selector is not None:
            out.append(selector)
    return out


@dataclass(slots=True)
class _Chosen:
    selector: Selector
    role: Role
    series: list[MetricSeries]
    tracks: list[_Track]


def detect(
    series: Sequence[MetricSeries], settings: WedgeSettings | None = None
) -> WedgeReport | None:
    """Look for a wedge in `series`; None when there are no metric samples at all."""
    usable = [s for s in series if s.points]
    if not usable:
        return None
    settings = settings or WedgeSettings()
    window = settings.window_seconds or DEFAULT_WINDOW
    notes: list[str] = []
    chosen: list[_Chosen] = []
    taken: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for role, names, defaults in (
        (Role.OUTPUT, settings.output, DEFAULT_OUTPUT),
        (Role.WAITING, settings.waiting, DEFAULT_WAITING),
        (Role.CONTEXT, settings.context, DEFAULT_CONTEXT),
    ):
        for selector in _selectors(names, defaults):
            matched = [s for s in usable if selector.matches(s) and (s.name, s.labels) not in taken]
            if matched:
                taken.update((s.name, s.labels) for s in matched)
                chosen.append(
                    _Chosen(
                        selector=selector,
                        role=role,
                        series=matched,
                        tracks=[_track(s) for s in matched],
                    )
                )
            elif names:
                notes.append(f"{selector} (named in [wedge] {role.value}) is not in the metrics")
    outputs = [c for c in chosen if c.role is Role.OUTPUT]
    if any(s.rate for c in outputs for s in c.series):
        counters = [c for c in outputs if any(s.rate for s in c.series)]
        ignored = [c for c in outputs if c not in counters]
        if ignored:
            notes.append(
                "output judged on the token counters ("
                + ", ".join(str(c.selector) for c in counters)
                + "); gauges shown but not used: "
                + ", ".join(str(c.selector) for c in ignored)
            )
        deciding_outputs = counters
    else:
        deciding_outputs = outputs
    waiting = [c for c in chosen if c.role is Role.WAITING]
    all_times = sorted({p.at for s in usable for p in s.points})
    first, last = all_times[0], all_times[-1]
    interval = metrics.median_interval(all_times)
    gaps = metrics.scrape_gaps(usable)
    if not deciding_outputs:
        notes.append(
            "no output signal in the metrics (looked for "
            + ", ".join(settings.output or DEFAULT_OUTPUT)
            + "); name one in bundle.toml under [wedge] output"
        )
    if not waiting:
        notes.append(
            "no running or queued requests in the metrics (looked for "
            + ", ".join(settings.waiting or DEFAULT_WAITING)
            + "); name them in bundle.toml under [wedge] waiting"
        )
    episodes: list[Episode] = []
    short: Episode | None = None
    if deciding_outputs and waiting:
        grid = sorted(
            {st.start for c in (*deciding_outputs, *waiting) for t in c.tracks for st in t.states}
            | {st.end for c in (*deciding_outputs, *waiting) for t in c.tracks for st in t.states}
        )
        runs = _runs(grid, deciding_outputs, waiting)
        for run in runs:
            if run.duration >= window:
                episodes.append(run)
            elif run.end is None:
                short = run
    episode = episodes[0] if episodes else None
    if len(episodes) > 1:
        notes.append(
            f"{len(episodes)} wedge episodes; the report follows the first, the others start at "
            + ", ".join(iso(e.onset) for e in episodes[1:])
        )
    # A stall shorter than the window is said once, in the headline (`_summary`).
    signals = tuple(_signal(c, episode, deciding_outputs) for c in chosen)
    steps = tuple(
        step
        for c, signal in zip(chosen, signals, strict=True)
        if c.role is not Role.OUTPUT
        for step in _steps(signal, episode, last, window)
    )
    steps = tuple(sorted(steps, key=lambda s: (s.at, s.signal, s.kind.value)))
    possible = short if episode is None else None
    summary = _summary(episode, signals, steps, window, first, last, len(usable), possible)
    return WedgeReport(
        episode=episode,
        episodes=tuple(episodes),
        window=window,
        interval=round(interval, 3) if interval is not None else None,
        first_sample=first,
        last_sample=last,
        signals=signals,
        steps=steps,
        gaps=gaps,
        summary=summary,
        notes=tuple(notes),
        possible=possible,
    )


def _value(chosen: _Chosen, moment: datetime) -> tuple[float, _State] | None:
    """The sum of the current values of a signal's series, with the first series' state
    (its `source`, `series`, and `start`: the time of the sample cited)."""
    total = 0.0
    first: _State | None = None
    for track in chosen.tracks:
        state = track.at(moment)
        if state is not None:
            total += state.value
            first = first or state
    return (total, first) if first is not None else None


def _runs(grid: list[datetime], outputs: list[_Chosen], waiting: list[_Chosen]) -> list[Episode]:
    """Every stretch of the grid where output is zero and work waits."""
    runs: list[Episode] = []
    onset: datetime | None = None
    onset_after: datetime | None = None
    onset_state: _State | None = None
    last_false: datetime | None = None
    for moment in grid:
        out_values = [v for v in (_value(c, moment) for c in outputs) if v is not None]
        wait_values = [v for v in (_value(c, moment) for c in waiting) if v is not None]
        if not out_values or not wait_values:
            continue
        output_zero = all(metrics.zero(v) for v, _ in out_values)
        waiting_work = sum(v for v, _ in wait_values)
        wedged = output_zero and waiting_work > 0
        if wedged and onset is None:
            onset, onset_after, onset_state = moment, last_false, out_values[0][1]
        elif not wedged:
            if onset is not None and onset_state is not None:
                reason = "output resumed" if not output_zero else "no work waiting any more"
                runs.append(
                    Episode(
                        onset=onset,
                        onset_after=onset_after,
                        end=moment,
                        end_reason=reason,
                        duration=seconds(moment - onset),
                        source=onset_state.source,
                        series=onset_state.series,
                        sampled_at=onset_state.start,
                    )
                )
                onset = None
            last_false = moment
    if onset is not None and onset_state is not None:
        runs.append(
            Episode(
                onset=onset,
                onset_after=onset_after,
                end=None,
                end_reason="",
                duration=seconds(grid[-1] - onset),
                source=onset_state.source,
                series=onset_state.series,
                sampled_at=onset_state.start,
            )
        )
    return runs


def _display_points(chosen: _Chosen) -> tuple[Point, ...]:
    """The signal summed over its series at each of their sample times."""
    times = sorted({p.at for s in chosen.series for p in s.points})
    out = []
    for moment in times:
        found = _value(chosen, moment)
        if found is not None:
            state = found[1]
            out.append(
                Point(
                    at=moment,
                    value=found[0],
                    source=state.source,
                    series=state.series,
                    sampled_at=state.start,
                )
            )
    return tuple(out)


def _signal(chosen: _Chosen, episode: Episode | None, deciding: list[_Chosen]) -> Signal:
    points = _display_points(chosen)
    values = [p.value for p in points]
    before = at_onset = None
    if episode is not None:
        if episode.onset_after is not None:
            found = _value(chosen, episode.onset_after)
            before = found[0] if found else None
        found = _value(chosen, episode.onset)
        at_onset = found[0] if found else None
    name = str(chosen.selector)
    rate = any(s.rate for s in chosen.series)
    shown = f"rate of {name}" if rate else name
    last = values[-1] if values else 0.0
    shows = False
    if episode is not None and at_onset is not None:
        if chosen.role is Role.OUTPUT:
            shows = chosen in deciding and metrics.zero(at_onset)
        elif chosen.role is Role.WAITING:
            shows = at_onset > 0
    if chosen.role is Role.OUTPUT and chosen not in deciding:
        text = f"{shown}: shown, not used (the token counters decide)"
    elif episode is not None and at_onset is not None:
        was = f" (was {_num(before)})" if before is not None else ""
        text = f"{shown}: {_num(at_onset)} at onset{was}, {_num(last)} at the last sample"
    else:
        text = f"{shown}: {_num(min(values))} to {_num(max(values))}" if values else shown
    return Signal(
        name=name,
        role=chosen.role,
        series=len(chosen.series),
        rate=rate,
        points=points,
        minimum=min(values) if values else 0.0,
        maximum=max(values) if values else 0.0,
        before=before,
        at_onset=at_onset,
        last=last,
        shows_wedge=shows,
        text=text,
    )


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    if value == int(value) and abs(value) < 1e12:
        return str(int(value))
    return f"{value:.3g}"


def _steps(
    signal: Signal, episode: Episode | None, last: datetime, window: float
) -> list[StepChange]:
    out: list[StepChange] = []
    # Growth shorter than half a wedge window is load noise, not a step change.
    growth = linear_growth(signal.points, min_span=window / 2)
    if growth is not None:
        start, end, slope = growth
        a, b = signal.points[start], signal.points[end]
        span = (b.at - a.at).total_seconds()
        out.append(
            StepChange(
                signal=signal.name,
                kind=StepKind.LINEAR_GROWTH,
                at=a.at,
                text=(
                    f"{signal.name} starts growing linearly after {clock(a.at)}: "
                    f"{_num(a.value)} to {_num(b.value)} in {span:g} s ({slope:+.3g}/s)"
                ),
                source=signal.points[start + 1].source,
                series=signal.points[start + 1].series,
                sampled_at=signal.points[start + 1].sampled_at,
                slope=round(slope, 6),
            )
        )
    if episode is not None:
        until = episode.end or last
        during = [p for p in signal.points if episode.onset <= p.at <= until]
        earlier = [p for p in signal.points if p.at < episode.onset]
        if (
            len(during) >= 3
            and len({p.value for p in during}) == 1
            and len({p.value for p in earlier}) > 1
        ):
            out.append(
                StepChange(
                    signal=signal.name,
                    kind=StepKind.FROZEN,
                    at=during[0].at,
                    text=(
                        f"{signal.name} stays at exactly {_num(during[0].value)} during the "
                        "wedge (it varied before): nothing updates it"
                    ),
                    source=during[0].source,
                    series=during[0].series,
                    sampled_at=during[0].sampled_at,
                )
            )
    return out


def linear_growth(
    points: Sequence[Point], *, min_span: float = 0.0
) -> tuple[int, int, float] | None:
    """The longest linear rise in `points`: (first index, last index, slope per second).

    A candidate is a maximal non-decreasing run that starts where the values first
    rise, has at least `GROWTH_MIN_POINTS` points over at least `min_span` seconds,
    rises on at least half of its steps, rises by at least a tenth of the signal's
    largest value, and fits a straight line with R² >= 0.9. None when nothing qualifies.
    """
    n = len(points)
    if n < GROWTH_MIN_POINTS:
        return None
    peak = max(abs(p.value) for p in points)
    if peak <= 0:
        return None
    best: tuple[int, int, float] | None = None
    index = 0
    while index < n:
        # The maximal non-decreasing run from `index`; runs partition the points.
        end = index
        while end < n - 1 and points[end + 1].value >= points[end].value:
            end += 1
        # Leading flat points are the level before the growth, not the growth.
        start = index
        while start < end and points[start + 1].value == points[start].value:
            start += 1
        count = end - start + 1
        span = (points[end].at - points[start].at).total_seconds()
        longer = best is None or count > best[1] - best[0] + 1
        if count >= GROWTH_MIN_POINTS and span >= min_span and longer:
            rising = sum(1 for i in range(start, end) if points[i + 1].value > points[i].value)
            rise = points[end].value - points[start].value
            if rising >= GROWTH_RISING_SHARE * (count - 1) and rise >= GROWTH_MIN_RISE * peak:
                fit = _fit(points[start : end + 1])
                if fit is not None and fit[1] >= GROWTH_MIN_R2 and fit[0] > 0:
                    best = (start, end, fit[0])
        index = end + 1
    return best


def _fit(points: Sequence[Point]) -> tuple[float, float] | None:
    """Least-squares slope (per second) and R² of `points`."""
    xs = [(p.at - points[0].at).total_seconds() for p in points]
    ys = [p.value for p in points]
    if len(set(xs)) < 2:
        return None
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - mean_y) ** 2 for y in ys)
    slope = sxy / sxx
    if syy == 0:
        return None
    r2 = (sxy * sxy) / (sxx * syy)
    return slope, r2 if math.isfinite(r2) else 0.0


def _summary(
    episode: Episode | None,
    signals: Sequence[Signal],
    steps: Sequence[StepChange],
    window: float,
    first: datetime,
    last: datetime,
    count: int,
    possible: Episode | None = None,
) -> str:
    span = f"{count} series from {iso(first)} to {iso(last)}"
    if episode is None and possible is not None:
        return (
            f"Possibly wedged (window shorter than {window:g} s): output at zero with work "
            f"waiting since {iso(possible.onset)}, {possible.duration:g} s by the last sample "
            f"({span}); a longer history would tell a wedge from a pause."
        )
    if episode is None:
        return (
            f"No wedge in the metrics: output never stayed at zero for {window:g} s while "
            f"requests were waiting ({span})."
        )
    output = [s for s in signals if s.role is Role.OUTPUT and s.shows_wedge]
    waiting = [s for s in signals if s.role is Role.WAITING and s.shows_wedge]
    out_text = ", ".join(f"rate of {s.name}" if s.rate else s.name for s in output)
    wait_text = ", ".join(
        f"{s.name} {_num(s.at_onset)} at onset, {_num(s.last)} at the last sample" for s in waiting
    )
    if episode.end is None:
        when = (
            f"from {iso(episode.onset)} and still wedged at the last sample ({iso(last)}, "
            f"{episode.duration:g} s)"
        )
    else:
        when = (
            f"from {iso(episode.onset)} to {iso(episode.end)} ({episode.duration:g} s, "
            f"ended: {episode.end_reason})"
        )
    between = (
        f" The stop happened after the sample at {iso(episode.onset_after)}."
        if episode.onset_after is not None
        else ""
    )
    text = (
        f"Wedged {when}: output stayed at zero ({out_text}) while requests waited "
        f"({wait_text}).{between}"
    )
    growth = [s for s in steps if s.kind is StepKind.LINEAR_GROWTH]
    if growth:
        text += " " + "; ".join(s.text for s in growth) + "."
    return text
