"""The wedge detector of `analysis/wedge.py`, run online over a ring of recent samples.

`report watch` keeps the last few minutes of `/metrics` scrapes (or the last
`query_range` answer) and, at every poll, asks `wedge.detect` the same question the
report asks of a bundle: has output been zero while work waits, for at least the
window? The answer is a `Decision` with the numbers behind it, so the watcher's log
line can be checked against the metrics by hand::

    wedged: output 0/s (sglang:generation_tokens_total) for 3.5 s >= 3 s while 12 wait
    (sglang:num_queue_reqs 9, sglang:num_running_reqs 3); onset 2026-12-07T13:40:01.250Z

A quiet service (nothing running, nothing queued) is never a wedge: output at zero with
nothing waiting is idleness (`wedge.detect` requires work waiting). A probe (the health
route) that hangs past its deadline, again and again for the window, is the second
trigger (`health_decision`).

Pure: text and times in, records out. The scrape texts are cut to the lines of the
metrics the detector reads (`Relevant`), so the ring stays small and each scrape is
parsed once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from reporter.analysis import wedge
from reporter.core.times import iso
from reporter.evidence import metrics
from reporter.model import MetricSeries, WedgeSettings


class State(StrEnum):
    """What one poll concluded."""

    WEDGED = "wedged"
    """Zero output with work waiting for at least the window, to the last sample."""
    STALLING = "stalling"
    """Zero output with work waiting, for less than the window so far."""
    WORKING = "working"
    QUIET = "quiet"
    """Nothing running or queued: idle, never a wedge."""
    NO_DATA = "no-data"
    """Too few samples, or none of the metrics the detector reads."""


class Trigger(StrEnum):
    """Why a capture starts."""

    METRICS = "metrics"
    HEALTH = "health"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """One poll's verdict, with the numbers behind it (`text` is the log line)."""

    at: datetime
    state: State
    window: float
    onset: datetime | None = None
    stalled_for: float = 0.0
    output: float | None = None
    """The summed output rate (per second) at the last sample; None when not known."""
    waiting: float | None = None
    """The summed waiting requests at the last sample; None when not known."""
    parts: tuple[tuple[str, float], ...] = ()
    """(signal, value at the last sample) for each deciding signal."""
    samples: int = 0
    text: str = ""

    @property
    def wedged(self) -> bool:
        """True when this poll says the service is wedged."""
        return self.state is State.WEDGED


@dataclass(frozen=True, slots=True)
class Relevant:
    """The metric names the detector reads (the `[wedge]` defaults plus any named)."""

    names: frozenset[str]

    @classmethod
    def of(cls, settings: WedgeSettings) -> Relevant:
        """The base names of every selector the detector may use."""
        chosen: list[str] = []
        for names, defaults in (
            (settings.output, wedge.DEFAULT_OUTPUT),
            (settings.waiting, wedge.DEFAULT_WAITING),
            (settings.context, wedge.DEFAULT_CONTEXT),
        ):
            chosen.extend(names or defaults)
        return cls(frozenset(name.partition("{")[0].strip() for name in chosen))

    def cut(self, text: str) -> str:
        """The `# TYPE` lines and samples of the relevant metrics in a scrape, in order."""
        kept: list[str] = []
        for line in text.splitlines():
            if line.startswith("#"):
                parts = line.split(maxsplit=3)
                if len(parts) >= 3 and parts[1] == "TYPE" and parts[2] in self.names:
                    kept.append(line)
                continue
            name = line.partition("{")[0].partition(" ")[0].strip()
            if name in self.names:
                kept.append(line)
        return "\n".join(kept) + ("\n" if kept else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One scrape in the ring: when it started, its relevant lines, and their series."""

    at: datetime
    text: str
    series: tuple[MetricSeries, ...]


def sample(at: datetime, text: str, relevant: Relevant, *, source: str) -> Sample:
    """Cut a scrape to its relevant lines and parse them once (bad lines are skipped)."""
    cut = relevant.cut(text)
    parsed = metrics.parse_text(cut, source=source, captured_at=at)
    return Sample(at=at, text=cut, series=parsed.series)


@dataclass(slots=True)
class Ring:
    """Recent samples, oldest first, none older than `keep` seconds before the newest."""

    keep: float
    samples: deque[Sample] = field(default_factory=deque)

    def add(self, one: Sample) -> None:
        """Append a sample and drop those that fell out of the kept span."""
        self.samples.append(one)
        horizon = one.at - timedelta(seconds=self.keep)
        while self.samples and self.samples[0].at < horizon:
            self.samples.popleft()

    def series(self) -> tuple[MetricSeries, ...]:
        """The ring as cleaned series, counters as rates (as the loader makes them)."""
        merged, _ = metrics.finish([s for one in self.samples for s in one.series])
        return merged

    def history(self) -> str:
        """The ring as one metric-history file (`metrics/scrapes.prom` form, scrape markers)."""
        return "".join(f"{metrics.SCRAPE_MARKER}{iso(one.at)}\n{one.text}" for one in self.samples)


def judge(
    series: Sequence[MetricSeries], *, at: datetime, settings: WedgeSettings, samples: int
) -> Decision:
    """Decide from recent series whether the service is wedged now."""
    window = settings.window_seconds or wedge.DEFAULT_WINDOW
    found = wedge.detect(series, settings) if samples >= 2 else None
    if found is None:
        return Decision(
            at=at,
            state=State.NO_DATA,
            window=window,
            samples=samples,
            text=f"no data: {samples} sample(s) so far, the detector needs two",
        )
    deciding = [
        s for s in found.signals if s.role is wedge.Role.OUTPUT and _deciding(s, found.signals)
    ]
    waiting = [s for s in found.signals if s.role is wedge.Role.WAITING]
    if not deciding or not waiting:
        return Decision(
            at=at,
            state=State.NO_DATA,
            window=window,
            samples=samples,
            text="no data: " + "; ".join(found.notes or ("no output or waiting signal",)),
        )
    output = sum(s.last for s in deciding)
    queued = sum(s.last for s in waiting)
    parts = tuple((s.name, s.last) for s in (*deciding, *waiting))
    latest = found.episodes[-1] if found.episodes else None
    current = latest if latest is not None and latest.end is None else found.possible
    base = Decision(
        at=at,
        state=State.WORKING,
        window=window,
        output=output,
        waiting=queued,
        parts=parts,
        samples=samples,
    )
    if current is not None and current.end is None:
        stalled = (found.last_sample - current.onset).total_seconds()
        state = State.WEDGED if stalled >= window else State.STALLING
        cmp = ">=" if state is State.WEDGED else "<"
        text = (
            f"{state.value}: output {_num(output)}/s ({_names(deciding)}) for {stalled:.1f} s "
            f"{cmp} {window:g} s while {_num(queued)} wait ({_listing(waiting)}); "
            f"onset {iso(current.onset)}"
        )
        return replace(base, state=state, onset=current.onset, stalled_for=stalled, text=text)
    if metrics.zero(queued):
        text = (
            f"quiet: nothing waits ({_listing(waiting)}), output {_num(output)}/s: "
            "idle, not a wedge"
        )
        return replace(base, state=State.QUIET, text=text)
    text = f"working: output {_num(output)}/s ({_names(deciding)}), {_num(queued)} wait"
    return replace(base, text=text)


def _deciding(signal: wedge.Signal, signals: Iterable[wedge.Signal]) -> bool:
    """Counters decide over gauges when both are there (as in `wedge.detect`)."""
    if signal.rate:
        return True
    return not any(s.rate for s in signals if s.role is wedge.Role.OUTPUT)


def health_decision(
    *, at: datetime, hung_since: datetime | None, window: float, deadline: float, url: str
) -> Decision | None:
    """A wedge by the health route: every probe since `hung_since` hung past its deadline,
    for at least the window. None while that is not so."""
    if hung_since is None:
        return None
    hung = (at - hung_since).total_seconds()
    if hung < window:
        return None
    return Decision(
        at=at,
        state=State.WEDGED,
        window=window,
        onset=hung_since,
        stalled_for=hung,
        text=(
            f"wedged: every probe of {url} since {iso(hung_since)} hung past its "
            f"{deadline:g} s deadline, for {hung:.1f} s >= {window:g} s"
        ),
    )


def _num(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _names(signals: Sequence[wedge.Signal]) -> str:
    return ", ".join(s.name for s in signals)


def _listing(signals: Sequence[wedge.Signal]) -> str:
    return ", ".join(f"{s.name} {_num(s.last)}" for s in signals)
