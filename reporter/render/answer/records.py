"""The answer's records: the sides of a wait, timeouts, earlier reports, summary lines, the answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reporter.model.document import document
from reporter.render import nextsteps

# The records the package re-exports (`from reporter.render.answer import Answer`).
__all__ = ["Answer", "SeenBefore", "SeenReport", "SummaryLine", "Timeout", "WaitEdge", "WaitSide"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitSide:
    """One side of a wait: ranks, their state, where they are (code `file:line`), the dump."""

    label: str
    name: str
    """`ranks [0-1]`, `rank 3`, `PIDs [10,12]`: the label in a sentence."""
    ranks: tuple[int, ...]
    pids: tuple[int, ...]
    state: str
    where: str
    """`function (file:line)`: the call site of the collective, or the innermost app frame."""
    branch: str
    """The shared frame at the line this side left it (`on_idle (scheduler.py:118)`), or ""."""
    evidence: str
    """The dump that shows it: `snapshots/rank0_s2.txt:3`; "" for missing ranks."""
    doing: str = ""
    """What the ranks do, after their name: `idle in on_idle (decode.py:812)`, `, gone`."""
    brief: str = ""
    """`doing` without code locations, for titles: `idle in on_idle`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitEdge:
    """`waiting` ranks sit in `collective` until the `waited` ranks join it."""

    waiting: WaitSide
    collective: str
    waited: WaitSide
    kind: str = "collective"
    """`collective`, or `p2p`: one rank waits in a point-to-point call for its peer."""
    group: str | None = None
    """The waiting side's process group where the evidence names it (`default`, a name,
    `non-default`); None when not known."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeout:
    """A collective timeout or watchdog: set in the evidence, the library's default, or one
    that already fired (a log line)."""

    name: str
    value: str
    source: str
    """The evidence that shows it (`file:line`); for a library default, what names the
    backend and version (`bundle.toml`, `env/pip-freeze.txt:12`), or ""."""
    kind: str = "set"
    """`set` (a command line, the environment, `--locals`, code, the Flight Recorder),
    `default` (the library's own, for the backend and version in the evidence) or `fired`
    (a log line says it ended a wait)."""
    seconds: float | None = None
    """Its length where the value says (`timedelta(seconds=900)`, `5000ms`); None if not."""
    at: str = ""
    """For a fired timeout, when (`14:43:50 UTC`); "" when not known."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SeenReport:
    """An earlier report with the same (or a similar) signature."""

    path: str
    date: str
    status: str
    same: bool
    """True: the same signature; False: similar (same collectives, other lines or ranks)."""
    action_items: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SeenBefore:
    """Earlier reports of this hang, and where they were looked for.

    `folder` is "" when no folder of earlier reports was looked through: then "seen
    before" is not known, which is not the same as "never seen".
    """

    matches: tuple[SeenReport, ...] = ()
    folder: str = ""
    read: int = 0
    """How many incident reports were read in `folder`."""
    comparable: bool = True
    """False when the hang's signature has no shape to match (no stacks): then "not seen"
    cannot be told from "not comparable"."""


def seen_of(value: SeenBefore | Sequence[SeenReport]) -> SeenBefore:
    """`value` as a `SeenBefore` (a plain list of matches: looked through nowhere known)."""
    return value if isinstance(value, SeenBefore) else SeenBefore(matches=tuple(value))


@document
class SummaryLine:
    """One line of the summary block.

    Its topic, the text, and the evidence it cites (`file:line`); also an entry of
    `analyze --json`'s `summary_lines`.
    """

    topic: str
    text: str
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """Everything the first screen says, in one place."""

    title: str
    verdict_label: str
    """The verdict as the report headline says it (`wedged (metrics only)` when no stacks)."""
    paragraph: str
    """What the verdict paragraph adds to the summary block: the analysis's own sentences
    that no summary line says ("" when the block says it all)."""
    lines: tuple[SummaryLine, ...]
    steps: tuple[nextsteps.Step, ...]
    factors: tuple[str, ...]
    """Contributing factors to suggest (the reviewer accepts or deletes each)."""
    actions: tuple[str, ...]
    """Action items to suggest."""
    impact: tuple[str, ...] = ()
    """Impact to suggest: how long it was wedged, who waited."""
    edges: tuple[WaitEdge, ...]
    timeouts: tuple[Timeout, ...]
