"""The "Clients affected" line: the Go clients waiting on the server, and the requests queued.

Also the client-wait facts the title and the "What" line cite: which client goroutine
buckets wait (`client_waits`), which have waited at least `CLIENT_STUCK_MINUTES`
(`long_waits`), and how many goroutines that is (`client_count`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reporter.analysis.result import Analysis
from reporter.analysis.wedge import Role
from reporter.core.text import plural
from reporter.core.times import clock
from reporter.model import Bundle
from reporter.render.answer.records import SummaryLine
from reporter.render.answer.series import cite
from reporter.render.answer.topics import CLIENTS

if TYPE_CHECKING:
    from reporter.analysis.result import GoBucket


# Go clients waiting this long for the server are a symptom on their own: an LLM request
# may stream for minutes, but not for this long (the bucket's longest wait, from the dump).
CLIENT_STUCK_MINUTES = 5


def waiting_now(bundle: Bundle, analysis: Analysis) -> tuple[str, tuple[str, ...]]:
    """`77 requests queued, 5 running at the last sample`, with the samples cited."""
    wedge = analysis.wedge
    if wedge is None:
        return "", ()
    parts: list[str] = []
    sources: list[str] = []
    for signal in wedge.signals:
        if signal.role is not Role.WAITING or not signal.points or signal.last <= 0:
            continue
        short = signal.name.rpartition(":")[2]
        parts.append(f"{signal.last:g} in `{short}`")
        last = signal.points[-1]
        sources.append(cite(bundle, last.source, last.series, last.sampled_at))
    if not parts:
        return "", ()
    return f"{', '.join(parts)} at the last sample ({clock(wedge.last_sample)} UTC)", tuple(sources)


def long_waits(analysis: Analysis) -> tuple[GoBucket, ...]:
    """Client goroutine buckets that have waited at least `CLIENT_STUCK_MINUTES`."""
    goroutines = analysis.goroutines
    if goroutines is None:
        return ()
    return tuple(
        b
        for b in goroutines.waiting
        if b.max_minutes is not None and b.max_minutes >= CLIENT_STUCK_MINUTES
    )


def client_waits(analysis: Analysis) -> tuple[GoBucket, ...]:
    """Every Go client goroutine bucket waiting on a server, however long."""
    goroutines = analysis.goroutines
    return tuple(goroutines.waiting) if goroutines is not None else ()


def client_count(buckets: Sequence[GoBucket]) -> int:
    """How many client goroutines wait: the most any one dump shows. Two dumps of one
    moment (`debug=2` and a SIGQUIT dump) show the same goroutines; they are not added."""
    per_dump: dict[str, int] = {}
    for bucket in buckets:
        per_dump[bucket.source.path] = per_dump.get(bucket.source.path, 0) + bucket.count
    return max(per_dump.values(), default=0)


def wait_age(buckets: Sequence[GoBucket]) -> str:
    """` 2-3 minutes`, ` 3 minutes`, or "" when the dump gives no wait times."""
    low = [b.min_minutes for b in buckets if b.min_minutes is not None]
    high = [b.max_minutes for b in buckets if b.max_minutes is not None]
    if not high:
        return ""
    if low and min(low) != max(high):
        return f" {min(low)}-{max(high)} minutes"
    return f" {plural(max(high), 'minute')}"


def client_place(bucket: GoBucket) -> str:
    top = bucket.top
    return f" in `{top.function}`" if top is not None else ""


def clients_line(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    parts: list[str] = []
    sources: list[str] = []
    goroutines = analysis.goroutines
    if goroutines is not None and goroutines.waiting:
        bucket = goroutines.waiting[0]
        total = client_count(goroutines.waiting)
        since = (
            f" since at least {clock(bucket.waiting_since)[:8]} UTC"
            if bucket.waiting_since is not None
            else ""
        )
        wedged = analysis.wedge is not None and analysis.wedge.episode is not None
        if not analysis.classes and not wedged:
            # The title already counts them and says what they wait for: this line says
            # who started them and what else the dump holds.
            dump = next(
                (d for d in goroutines.dumps if d.source.path == bucket.source.path),
                goroutines.dumps[0],
            )
            started = (
                f", started by `{bucket.created_by.function}`"
                if bucket.created_by is not None
                else ""
            )
            rest = dump.total - total
            parts.append(
                f"{total} of the dump's {plural(dump.total, 'goroutine')}{since}{started}; "
                f"the other {rest} do not wait on the server"
            )
        else:
            parts.append(
                f"{plural(total, 'client goroutine')} wait for {bucket.client_wait}{since}"
            )
        sources.append(str(bucket.source))
    waiting, signal_sources = waiting_now(bundle, analysis)
    if waiting and analysis.wedge is not None and analysis.wedge.episode is not None:
        parts.append(f"requests waiting: {waiting}")
        sources.extend(signal_sources)
    if not parts:
        if goroutines is not None:
            return SummaryLine(
                topic=CLIENTS,
                text="No client goroutine in the Go dumps waits for the server.",
                sources=tuple(str(d.source) for d in goroutines.dumps[:2]),
            )
        return SummaryLine(
            topic=CLIENTS,
            text=(
                "Not known: no client dumps or request metrics in the evidence "
                "(`/debug/pprof/goroutine?debug=2` of the clients, or the server's "
                "`num_queue_reqs`, would tell)."
            ),
            sources=(),
        )
    text = "; ".join(parts)
    return SummaryLine(topic=CLIENTS, text=text[0].upper() + text[1:] + ".", sources=tuple(sources))
