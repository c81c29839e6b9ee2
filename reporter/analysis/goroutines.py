"""Bucket Go goroutines with the same stack, name what clients wait for, and date it.

Input: the bundle's `GoroutineDump`s and a `Similarity` (panicparse's knob):
`exact` compares functions, files, lines and arguments; `lines-ignored` (default)
functions and files; `loose` only the informative functions, ignoring the state.
The state and the creator's function are part of every bucket key; wait minutes
never split a bucket, they become its range.

Output: a `GoroutineAnalysis`: per dump, buckets largest first, e.g.

    "34 goroutines in `net/http.(*persistConn).roundTrip` [select, 2-3 minutes],
     created by `main.startAgents`"

with the Go runtime's own goroutines set aside; the buckets of clients waiting on a
server (`reporter/data/goroutines.toml`) with the time they have waited since
(capture time minus the longest wait: Go floors minutes, so "since at least"); and
`TimelineEvent`s for the timeline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cache

from reporter.analysis.result import GoBucket as GoBucket  # re-exported: their old home
from reporter.analysis.result import GoDumpSummary as GoDumpSummary
from reporter.analysis.result import GoroutineAnalysis as GoroutineAnalysis
from reporter.core import rules as data_files
from reporter.model import (
    EventKind,
    Goroutine,
    GoroutineDump,
    Similarity,
    TimelineEvent,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientWait:
    """A `[[client_wait]]` rule: frames that mean "a client waiting for `what`"."""

    id: str
    functions: re.Pattern[str]
    what: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GoRules:
    """The compiled goroutines.toml."""

    plumbing: re.Pattern[str]
    runtime: re.Pattern[str]
    client_waits: tuple[ClientWait, ...]


def parse_rules(text: str, *, source: str = "goroutines.toml") -> GoRules:
    """Compile a goroutines.toml; a malformed file raises `ReporterError`."""
    data = data_files.parse(text, data_files.SHAPES["goroutines.toml"], source=source)
    # The shape (reporter/core/rules.py) has checked every type and required key.
    waits = [
        ClientWait(
            id=entry["id"],
            functions=data_files.globs(entry.get("functions", [])),
            what=entry["what"],
        )
        for entry in data.get("client_wait", [])
    ]
    return GoRules(
        plumbing=data_files.globs(data.get("plumbing", {}).get("functions", [])),
        runtime=data_files.globs(data.get("runtime", {}).get("functions", [])),
        client_waits=tuple(waits),
    )


@cache
def default_go_rules() -> GoRules:
    """The rules shipped in `reporter/data/goroutines.toml`."""
    return parse_rules(
        data_files.read_text("goroutines.toml"), source="reporter/data/goroutines.toml"
    )


def analyze_goroutines(
    dumps: Sequence[GoroutineDump],
    *,
    similarity: Similarity = Similarity.LINES_IGNORED,
    rules: GoRules | None = None,
) -> GoroutineAnalysis:
    """Bucket every dump's goroutines and pick out the clients that wait on a server."""
    rules = rules or default_go_rules()
    summaries = tuple(_summarize(dump, similarity, rules) for dump in dumps)
    waiting = [b for s in summaries for b in s.buckets if b.client_wait]
    waiting.sort(
        key=lambda b: (
            -b.count,
            b.waiting_since.timestamp() if b.waiting_since else float("inf"),
            b.source.path,
            b.source.line,
        )
    )
    return GoroutineAnalysis(dumps=summaries, waiting=tuple(waiting), similarity=similarity)


def _key(goroutine: Goroutine, similarity: Similarity, rules: GoRules) -> tuple[object, ...]:
    creator = goroutine.created_by.function if goroutine.created_by else ""
    if similarity is Similarity.EXACT:
        frames: tuple[object, ...] = tuple(
            (f.function, f.file, f.line, f.args) for f in goroutine.frames
        )
        return (goroutine.state, frames, creator)
    if similarity is Similarity.LINES_IGNORED:
        return (goroutine.state, tuple((f.function, f.file) for f in goroutine.frames), creator)
    informative = tuple(
        f.function for f in goroutine.frames if not rules.plumbing.match(f.function)
    )
    return (informative or tuple(f.function for f in goroutine.frames), creator)


def _summarize(dump: GoroutineDump, similarity: Similarity, rules: GoRules) -> GoDumpSummary:
    groups: dict[tuple[object, ...], list[Goroutine]] = {}
    for goroutine in dump.goroutines:
        groups.setdefault(_key(goroutine, similarity, rules), []).append(goroutine)
    buckets = [_bucket(members, dump.captured_at, rules) for members in groups.values()]
    # Largest first; among equals, the clients waiting on a server lead.
    buckets.sort(
        key=lambda b: (
            -b.count,
            not b.client_wait,
            -(b.max_minutes if b.max_minutes is not None else -1),
            b.top.function if b.top else "",
            b.ids[0] if b.ids else -1,
            b.source.line,
        )
    )
    return GoDumpSummary(
        source=dump.source,
        form=dump.form,
        headline=dump.headline,
        captured_at=dump.captured_at,
        total=sum(g.count for g in dump.goroutines),
        buckets=tuple(b for b in buckets if not b.runtime),
        runtime=tuple(b for b in buckets if b.runtime),
    )


def _bucket(members: list[Goroutine], captured_at: datetime | None, rules: GoRules) -> GoBucket:
    first = members[0]
    count = sum(g.count for g in members)
    minutes = [g.wait_minutes for g in members if g.wait_minutes is not None]
    untimed = sum(g.count for g in members if g.wait_minutes is None)
    top = next((f for f in first.frames if not rules.plumbing.match(f.function)), None)
    if top is None and first.frames:
        top = first.frames[0]
    runtime = all(rules.runtime.match(f.function) for f in first.frames) and (
        first.created_by is None or bool(rules.runtime.match(first.created_by.function))
    )
    wait = next(
        (
            rule.what
            for rule in rules.client_waits
            if any(rule.functions.match(f.function) for f in first.frames)
        ),
        "",
    )
    low = min(minutes) if minutes else None
    high = max(minutes) if minutes else None
    since = captured_at - timedelta(minutes=high) if captured_at and high else None
    bucket = GoBucket(
        count=count,
        ids=tuple(sorted(g.id for g in members if g.id is not None)),
        state=first.state,
        min_minutes=low,
        max_minutes=high,
        untimed=untimed if minutes else 0,
        top=top,
        created_by=first.created_by,
        frames=first.frames,
        runtime=runtime,
        client_wait=wait,
        source=first.source,
        summary="",
        waiting_since=since,
    )
    return replace(bucket, summary=bucket_text(bucket))


def minutes_text(bucket: GoBucket) -> str:
    """`2 minutes`, `2-3 minutes`, or "" when Go printed no duration."""
    if bucket.max_minutes is None or bucket.min_minutes is None:
        return ""
    if bucket.min_minutes == bucket.max_minutes:
        text = f"{bucket.max_minutes} minute{'s' if bucket.max_minutes != 1 else ''}"
    else:
        text = f"{bucket.min_minutes}\u2013{bucket.max_minutes} minutes"
    if bucket.untimed:
        text += f"; {bucket.untimed} not yet timed"
    return text


def bucket_text(bucket: GoBucket, *, code: bool = True) -> str:
    """`34 goroutines in `f` [select, 2-3 minutes], created by `main.startAgents``.

    With `code=False` the function names are left bare (for text quoted whole as code).
    """
    tick = "`" if code else ""
    noun = "goroutine" if bucket.count == 1 else "goroutines"
    where = f" in {tick}{bucket.top.function}{tick}" if bucket.top else ""
    detail = ", ".join(p for p in (bucket.state, minutes_text(bucket)) if p)
    bracket = f" [{detail}]" if detail else ""
    creator = f", created by {tick}{bucket.created_by.function}{tick}" if bucket.created_by else ""
    return f"{bucket.count} {noun}{where}{bracket}{creator}"


def _clock(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def clients_line(analysis: GoroutineAnalysis, wedge_onset: datetime | None = None) -> str:
    """One sentence for next to the server verdict, or "" without waiting clients.

    `Clients: 34 goroutines waiting for an HTTP response in `...roundTrip` [select, 2-3 minutes],
    waiting since at least 2026-11-29 15:03 UTC; server wedge onset 2026-11-29 15:03 UTC.`
    """
    if not analysis.waiting:
        return ""
    bucket = analysis.waiting[0]
    noun = "goroutine" if bucket.count == 1 else "goroutines"
    where = f" in `{bucket.top.function}`" if bucket.top else ""
    detail = ", ".join(p for p in (bucket.state, minutes_text(bucket)) if p)
    text = f"Clients: {bucket.count} {noun} waiting for {bucket.client_wait}{where}"
    if detail:
        text += f" [{detail}]"
    if bucket.waiting_since is not None:
        text += f", waiting since at least {_clock(bucket.waiting_since)}"
    if wedge_onset is not None:
        text += f"; server wedge onset {_clock(wedge_onset)}"
    more = len(analysis.waiting) - 1
    if more:
        text += f" ({more} more waiting bucket{'s' if more != 1 else ''} below)"
    return text + "."


def goroutine_events(analysis: GoroutineAnalysis) -> tuple[TimelineEvent, ...]:
    """Timeline entries: each dump's capture, and when each waiting bucket began to wait."""
    events: list[TimelineEvent] = []
    for dump in analysis.dumps:
        if dump.captured_at is not None:
            waiting = sum(b.count for b in dump.buckets if b.client_wait)
            extra = f", {waiting} waiting on a server" if waiting else ""
            events.append(
                TimelineEvent(
                    at=dump.captured_at,
                    kind=EventKind.GOROUTINES,
                    text=f"Go goroutine dump ({dump.form.value}): {dump.total} goroutines{extra}",
                    source=dump.source,
                )
            )
        for bucket in dump.buckets:
            if bucket.client_wait and bucket.waiting_since is not None:
                events.append(
                    TimelineEvent(
                        at=bucket.waiting_since,
                        kind=EventKind.GOROUTINES,
                        text=f"clients waiting for {bucket.client_wait} by this time at the latest "
                        f"({bucket.max_minutes} min before the Go dump): "
                        f"{bucket_text(bucket, code=False)}",
                        source=bucket.source,
                    )
                )
    events.sort(key=lambda e: (e.at, e.source.path, e.source.line, e.text))
    return tuple(events)
