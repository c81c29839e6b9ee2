"""The Flight Recorder's result records: what `reporter.analysis.flight_recorder` finds.

`FlightRecorderAnalysis` is `Analysis.flight_recorder`: the chosen trace set aligned by
sequence id, per group, with its first mismatch (`FrMismatch`, split into `FrSide`s).
"""

from __future__ import annotations

from reporter.analysis.ranksets import RankSet
from reporter.model import FrOrigin
from reporter.model.document import document


@document
class FrRankProgress:
    """One rank's progress in one group: ids of the last issued and last completed collective.

    `last_completed` is None where the trace does not say (gloo entries stay `scheduled`;
    its `pg_status` does say).
    """

    rank: int
    group: str
    last_issued: int | None
    last_issued_op: str
    last_completed: int | None


@document
class FrSide(RankSet):
    """Ranks that agree at the mismatching id: same op, sizes and dtypes (`op` "" = missing)."""

    op: str
    sizes: str
    states: tuple[str, ...] = ()


@document
class FrMismatch:
    """The first id of one group where the ranks disagree.

    `kind`: `op` (different operations), `sizes`, `dtypes` or `missing` (some members never
    issued it). `not_completed`: ranks holding the entry that did not complete it (where
    the trace says). `previous`: for each missing rank, its last issued op and id here.
    """

    trace_set: str
    group: str
    group_desc: str
    seq_id: int
    kind: str
    sides: tuple[FrSide, ...]
    missing: tuple[int, ...]
    not_completed: tuple[int, ...]
    previous: tuple[tuple[int, str, int | None], ...] = ()
    members: tuple[int, ...] = ()

    @property
    def by_op(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Operation -> ranks that issued it at this id, sorted by smallest rank."""
        ops: dict[str, set[int]] = {}
        for side in self.sides:
            ops.setdefault(side.op, set()).update(side.ranks)
        return tuple(
            sorted(((op, tuple(sorted(r))) for op, r in ops.items()), key=lambda p: p[1][0])
        )


@document
class FrCell:
    """One rank's entry at one id in the aligned table; `op` "" where the rank has none."""

    rank: int
    op: str
    sizes: str
    state: str


@document
class FrRow:
    """One id of a group's aligned table; `agree` False on the mismatching row."""

    seq_id: int
    cells: tuple[FrCell, ...]
    agree: bool


@document
class FrGroupView:
    """One process group of the trace set: members, the rows around its mismatch (or its end)."""

    group: str
    desc: str
    members: tuple[int, ...]
    first_seq: int | None
    last_seq: int | None
    rows: tuple[FrRow, ...]
    mismatch: FrMismatch | None
    notes: tuple[str, ...] = ()


@document
class FlightRecorderAnalysis:
    """What the Flight Recorder traces of a bundle say; one trace set is analysed in full.

    `trace_set` is the chosen set (the folder of the per-rank files), `other_sets` the rest
    with their own first mismatch, if any.
    """

    trace_set: str
    origin: FrOrigin
    backend: str
    version: str
    ranks: tuple[int, ...]
    files: tuple[str, ...]
    progress: tuple[FrRankProgress, ...]
    groups: tuple[FrGroupView, ...]
    first_mismatch: FrMismatch | None
    other_sets: tuple[tuple[str, FrMismatch | None], ...] = ()
    notes: tuple[str, ...] = ()
