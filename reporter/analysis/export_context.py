"""The typed records of `analyze --json` for the evidence around the stacks.

`wedge`, `diff` (also the whole of `report diff --json`), `goroutines` and
`flight_recorder`: one document class per object, and the function that builds it from
the analysis result. `environment`, `excerpts` and `timeline` need none: their records
(`EnvironmentSummary`, `ExcerptAnalysis`, `TimelineEvent`) are their own documents.
JSON and schema come from `reporter.model.document`; `export` puts them into the
analysis document.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from reporter.core.times import iso
from reporter.model import GoFrame
from reporter.model.document import Count, document, project, spec

if TYPE_CHECKING:
    # Types of the builders' arguments only: the CLI pays for no module it does not use.
    from reporter.analysis.diff import EnvDiff
    from reporter.analysis.fr_result import FlightRecorderAnalysis, FrMismatch
    from reporter.analysis.result import (
        GoBucket,
        GoroutineAnalysis,
    )
    from reporter.analysis.wedge import WedgeReport

# --- wedge


@document
class WedgeSignal:
    """One metric signal around the wedge."""

    name: str
    role: str = spec("output, waiting or context")
    series: int
    rate: bool
    shows_wedge: bool
    before: float | None
    at_onset: float | None
    last: float | None
    min: float | None
    max: float | None
    text: str


@document
class StepChange:
    """A signal that started to grow steadily or froze."""

    signal: str
    kind: str = spec("linear-growth or frozen")
    at: str
    slope_per_second: float | None
    text: str
    source: str


@document
class Episode:
    """One wedged stretch."""

    onset: str
    end: str | None
    duration_seconds: float
    source: str


@document
class Gap:
    """A stretch with no samples."""

    start: str | None
    end: str | None
    seconds: float
    source: str


@document
class Wedge:
    """The wedge found in the metrics; times ISO 8601 UTC (`2026-11-29T14:43:41.973Z`)."""

    found: bool
    onset: str | None = spec("the first sample of the wedge")
    onset_after: str | None = spec("the last sample before it: the stop happened between")
    end: str | None = spec("null while still wedged")
    end_reason: str | None
    still_wedged: bool
    duration_seconds: float | None
    onset_source: str | None
    window_seconds: float
    interval_seconds: float | None
    first_sample: str | None
    last_sample: str | None
    summary: str
    signals: tuple[WedgeSignal, ...]
    step_changes: tuple[StepChange, ...]
    episodes: tuple[Episode, ...]
    gaps: tuple[Gap, ...]
    notes: tuple[str, ...]


def _round(value: float | None) -> float | None:
    """Six significant digits: enough for any signal, and no float noise in the JSON."""
    return float(f"{value:.6g}") if value is not None else None


def _time(moment: datetime | None) -> str | None:
    return iso(moment) if moment is not None else None


def wedge(report: WedgeReport | None) -> Wedge | None:
    """The wedge, or None without metrics. `onset` is the first sample of the wedge,
    `onset_after` the last sample before it; `end` is None while still wedged."""
    if report is None:
        return None
    episode = report.episode
    return Wedge(
        found=episode is not None,
        onset=_time(episode.onset) if episode else None,
        onset_after=_time(episode.onset_after) if episode else None,
        end=_time(episode.end) if episode else None,
        end_reason=episode.end_reason or None if episode else None,
        still_wedged=report.still_wedged,
        duration_seconds=episode.duration if episode else None,
        onset_source=str(episode.source) if episode else None,
        window_seconds=report.window,
        interval_seconds=report.interval,
        first_sample=_time(report.first_sample),
        last_sample=_time(report.last_sample),
        summary=report.summary,
        signals=tuple(
            WedgeSignal(
                name=s.name,
                role=s.role.value,
                series=s.series,
                rate=s.rate,
                shows_wedge=s.shows_wedge,
                before=_round(s.before),
                at_onset=_round(s.at_onset),
                last=_round(s.last),
                min=_round(s.minimum),
                max=_round(s.maximum),
                text=s.text,
            )
            for s in report.signals
        ),
        step_changes=tuple(project(StepChange, s, slope_per_second=s.slope) for s in report.steps),
        episodes=tuple(project(Episode, e, duration_seconds=e.duration) for e in report.episodes),
        gaps=tuple(
            Gap(
                start=_time(g.start),
                end=_time(g.end),
                seconds=round((g.end - g.start).total_seconds(), 3),
                source=str(g.source),
            )
            for g in report.gaps
        ),
        notes=report.notes,
    )


# --- diff


@document
class Change:
    """One change."""

    kind: str = spec("flag, env, package, source, excerpt, gpu or fact")
    key: str
    status: str = spec("changed, added or removed")
    before: str | None
    after: str | None
    score: int
    why: str


@document
class Diff:
    """Ranked changes between two runs, likeliest culprit first."""

    changes: tuple[Change, ...]
    unchanged: Mapping[str, int] = spec("how many values of each kind did not change")
    notes: tuple[str, ...]
    good: str
    bad: str


def diff(result: EnvDiff) -> Diff:
    """`report diff --json` and `analyze --json`'s `diff`: `changes` in rank order first."""
    return Diff(
        changes=tuple(
            Change(
                kind=c.kind.value,
                key=c.key,
                status=c.status.value,
                before=c.before,
                after=c.after,
                score=c.score,
                why="; ".join(c.why),
            )
            for c in result.changes
        ),
        unchanged={kind.value: count for kind, count in result.unchanged},
        notes=result.notes,
        good=result.good,
        bad=result.bad,
    )


# --- goroutines


@document
class Bucket:
    """Goroutines with the same stack."""

    summary: str
    count: Count
    ids: tuple[int, ...]
    state: str
    min_minutes: int | None
    max_minutes: int | None
    untimed: Count
    top: GoFrame | None
    created_by: GoFrame | None
    client_wait: str | None
    waiting_since: str | None
    frames: tuple[str, ...]
    source: str


@document
class GoDump:
    """One goroutine dump."""

    source: str
    form: str
    headline: str
    captured_at: str | None
    total: Count
    buckets: tuple[Bucket, ...]
    runtime: tuple[Bucket, ...] = spec("the Go runtime's own goroutines, set aside")


@document
class Goroutines:
    """Go goroutine dumps, bucketed."""

    similarity: str
    dumps: tuple[GoDump, ...]
    waiting: tuple[Bucket, ...] = spec("the buckets of clients waiting on a server")


def _go_time(moment: datetime | None) -> str | None:
    # Go dumps keep the precision they were written with (not `times.iso`'s milliseconds).
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _bucket(b: GoBucket) -> Bucket:
    return Bucket(
        summary=b.summary,
        count=b.count,
        ids=b.ids,
        state=b.state,
        min_minutes=b.min_minutes,
        max_minutes=b.max_minutes,
        untimed=b.untimed,
        top=b.top,
        created_by=b.created_by,
        client_wait=b.client_wait or None,
        waiting_since=_go_time(b.waiting_since),
        frames=tuple(f"{f.function} ({f.file}:{f.line})" for f in b.frames),
        source=str(b.source),
    )


def goroutines(result: GoroutineAnalysis) -> Goroutines:
    """`analyze --json`'s `goroutines` object."""
    return Goroutines(
        similarity=result.similarity.value,
        dumps=tuple(
            GoDump(
                source=str(d.source),
                form=d.form.value,
                headline=d.headline,
                captured_at=_go_time(d.captured_at),
                total=d.total,
                buckets=tuple(_bucket(b) for b in d.buckets),
                runtime=tuple(_bucket(b) for b in d.runtime),
            )
            for d in result.dumps
        ),
        waiting=tuple(_bucket(b) for b in result.waiting),
    )


# --- Flight Recorder


@document
class FrSide:
    """One side of a mismatch."""

    op: str
    sizes: str
    ranks: tuple[int, ...]
    states: tuple[str, ...]


@document
class FrMismatchRow:
    """The first sequence id where the ranks disagree."""

    group: str
    group_desc: str
    seq_id: int
    kind: str = spec("op, sizes, dtypes or missing")
    by_op: Mapping[str, tuple[int, ...]] = spec("operation -> ranks that issued it at that id")
    missing: tuple[int, ...] = spec("member ranks with no entry")
    not_completed: tuple[int, ...]
    sides: tuple[FrSide, ...]


@document
class FrGroupProgress:
    """Where one rank stands in one process group."""

    group: str
    last_issued: int | None
    last_issued_op: str
    last_completed: int | None


@document
class FrRank:
    """One rank's progress, per process group."""

    rank: int
    groups: tuple[FrGroupProgress, ...]


@document
class FrGroup:
    """One process group."""

    group: str
    desc: str
    members: tuple[int, ...]
    first_seq: int | None
    last_seq: int | None
    mismatch_seq: int | None


@document
class FrOtherSet:
    """Another trace set found beside the chosen one."""

    trace_set: str
    first_mismatch: FrMismatchRow | None


@document
class FlightRecorder:
    """The chosen Flight Recorder trace set and where the ranks disagree."""

    trace_set: str = spec("the folder of the per-rank dumps")
    origin: str = spec("pickle, json or watchdog-log")
    backend: str
    version: str
    files: tuple[str, ...]
    ranks: tuple[FrRank, ...]
    first_mismatch: FrMismatchRow | None = spec("null when the ranks agree")
    groups: tuple[FrGroup, ...]
    other_sets: tuple[FrOtherSet, ...]
    notes: tuple[str, ...]


def _mismatch(m: FrMismatch | None) -> FrMismatchRow | None:
    if m is None:
        return None
    return FrMismatchRow(
        group=m.group,
        group_desc=m.group_desc,
        seq_id=m.seq_id,
        kind=m.kind,
        by_op={op: tuple(ranks) for op, ranks in m.by_op},
        missing=m.missing,
        not_completed=m.not_completed,
        sides=tuple(project(FrSide, s) for s in m.sides),
    )


def flight_recorder(fr: FlightRecorderAnalysis | None) -> FlightRecorder | None:
    """The Flight Recorder analysis; None without traces."""
    if fr is None:
        return None
    ranks: dict[int, list[FrGroupProgress]] = {}
    for p in fr.progress:
        ranks.setdefault(p.rank, []).append(project(FrGroupProgress, p))
    return FlightRecorder(
        trace_set=fr.trace_set,
        origin=fr.origin.value,
        backend=fr.backend,
        version=fr.version,
        files=fr.files,
        ranks=tuple(FrRank(rank=r, groups=tuple(g)) for r, g in sorted(ranks.items())),
        first_mismatch=_mismatch(fr.first_mismatch),
        groups=tuple(
            project(FrGroup, g, mismatch_seq=g.mismatch.seq_id if g.mismatch else None)
            for g in fr.groups
        ),
        other_sets=tuple(
            FrOtherSet(trace_set=name, first_mismatch=_mismatch(m)) for name, m in fr.other_sets
        ),
        notes=fr.notes,
    )
