"""View records and builders both documents share: the local report and the upstream draft.

A `Block` is a titled text to fence (a `<details>` body, a stack, a dump); a `ClassRow`
is one stack class in the classes table; a `BranchView` one side of the branch point;
a `SignalRow` one metric signal. Builders take a `TextPolicy`, so the same row is escaped
for the local report and redacted for a draft: evidence strings go through
`policy.evidence` first and the formatting waits for them (`later`) when they are not
final yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reporter.analysis.ranksets import format_pids
from reporter.analysis.result import Analysis, BranchPoint, StackClass
from reporter.analysis.wedge import Signal, WedgeReport
from reporter.core.text import number
from reporter.model import Frame, innermost_python
from reporter.render import markdown as md
from reporter.render.policy import Text, TextPolicy, final, later


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A titled text shown fenced: a `<details>` summary and its body, or a stack.

    `key` tells blocks apart when an upstream draft trims the largest one to fit.
    """

    title: Text
    text: Text
    info: str = "text"
    key: str = ""
    note: str = ""

    @property
    def body(self) -> str:
        """The fenced text (only once the text is final)."""
        return md.fence(final(self.text), self.info)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassRow:
    label: str
    count: int
    state: str
    blocked_in: str
    top_frame: Text


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchView:
    label: str
    collective: str
    frames: tuple[Text, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalRow:
    signal: str
    role: str
    series: int
    before: str
    at_onset: str
    last: str
    range: str
    shows: str


def located(frame: Frame, *, limit: int = 110) -> str:
    """`function (file:line)`: a frame with its line, as py-spy prints it; a function name
    longer than `limit` (0: no limit) is cut."""
    place = f"{frame.file}:{frame.line}" if frame.line is not None else frame.file
    name = frame.function
    if limit and len(name) > limit:
        name = name[: limit - 1] + "…"
    return f"{name} ({place})"


def blocked_in(stack_class: StackClass) -> str:
    """The class's "blocked in" cell: its collective, else `wait: <kind>`, else `-`."""
    wait = f"wait: {stack_class.wait}" if stack_class.wait else "-"
    return md.cell(stack_class.collective or wait)


def class_rows(analysis: Analysis, policy: TextPolicy, *, instances: bool) -> tuple[ClassRow, ...]:
    """One row per stack class; `instances` names whose ranks they are (several servers or
    jobs number their ranks alike)."""
    rows = []
    for stack_class in analysis.classes:
        top = innermost_python(stack_class.frames)
        # PIDs are listed: `[8261-8262]` would read as every PID between.
        label = format_pids(stack_class.ranks) if analysis.rank_unit == "pid" else stack_class.label
        rows.append(
            ClassRow(
                label=f"instance {stack_class.instance}: {label}" if instances else label,
                count=len(stack_class.ranks),
                state=stack_class.state.value,
                blocked_in=blocked_in(stack_class),
                top_frame=later(md.code_cell, policy.evidence(f"class {label}", top.display()))
                if top is not None
                else "-",
            )
        )
    return tuple(rows)


def branch_views(
    point: BranchPoint | None, frame_text: Callable[[str, Frame], Text]
) -> tuple[BranchView, ...]:
    """The sides of the branch point; `frame_text(label, frame)` draws each frame."""
    return tuple(
        BranchView(
            label=b.label,
            collective=b.collective or "no collective",
            frames=tuple(frame_text(b.label, f) for f in b.frames),
        )
        for b in (point.branches if point else ())
    )


def figure(value: float | None) -> str:
    """A measurement for a table cell: `-` when there is none."""
    return "-" if value is None else number(value)


def signal_row(signal: Signal, wedge: WedgeReport | None = None) -> SignalRow:
    """One metric signal: its name, role, series count and values around the onset, and
    whether it shows the wedge: `yes` when it decides it, else how it changes at the onset
    (`grows from the onset`, `frozen from the onset`) when the `wedge`'s step changes say so."""
    shows = "yes" if signal.shows_wedge else (onset_change(signal, wedge) or "-")
    return SignalRow(
        signal=md.code_cell(signal.name),
        role=signal.role.value + (" (rate)" if signal.rate else ""),
        series=signal.series,
        before=figure(signal.before),
        at_onset=figure(signal.at_onset),
        last=figure(signal.last),
        range=f"{figure(signal.minimum)} to {figure(signal.maximum)}",
        shows=shows,
    )


# A step change counts as "at the onset" when it starts this close to it (scrapes are
# seconds apart; a queue starts growing within a scrape or two of the stop).
ONSET_SLACK_S = 30.0
_CHANGE_WORDS = {"linear-growth": "grows from the onset", "frozen": "frozen from the onset"}


def onset_change(signal: Signal, wedge: WedgeReport | None) -> str:
    """How `signal` changes at the wedge's onset, from the wedge's step changes; "" when it
    does not (or there is no onset)."""
    episode = wedge.episode if wedge is not None else None
    if wedge is None or episode is None:
        return ""
    for step in wedge.steps:
        if step.signal != signal.name:
            continue
        if abs((step.at - episode.onset).total_seconds()) <= ONSET_SLACK_S:
            return _CHANGE_WORDS.get(step.kind.value, "changes at the onset")
    if signal.before and signal.at_onset == 0 and signal.last == 0:
        return "drops to zero at the onset"
    return ""
