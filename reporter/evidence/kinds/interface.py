"""What one evidence kind's module declares: its `KindEntry` (sniff, parse, merge, capture).

A kind module (`reporter/evidence/kinds/goroutines.py`) holds the kind's parser (or calls
the one it has in `reporter/evidence/`, as `pyspytext.py` does) and, at its end, its entry; `reporter/evidence/kinds/__init__.py` lists every entry (`REGISTRY`)::

    ENTRY = KindEntry(
        kind=EvidenceKind("goroutines"),
        parse=lambda text, read: parse(text, source=read.source),
        sniffs=(sniffed(EvidenceKind("goroutines"), SniffStep.DISTINCTIVE, sniff),),
        merges=(FieldMerge("goroutine_dumps", stamp=dated, finish=flat(key=...)),),
        shown="bucketed under Clients",
    )

The per-round `/proc` kinds build theirs with `round_read_entry` (sniffed first, merged in
capture order, captured as a `RoundRead`).

Sniffing races the kinds' `markers`, then asks each `Sniff` at its `SniffStep` in
`reporter.evidence.sniff`; the
loader parses with `parse` and folds each `FieldMerge`'s `Evidence` field into the bundle
(`reporter.evidence.kinds.fold`); `report collect` captures a `RoundRead` after every
snapshot round, locally and on a remote host alike (`reporter.collect.procread.read_round`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import IntEnum
from typing import Any

from reporter.evidence.kinds.sniffing import Marker
from reporter.model import EvidenceKind, ParseResult, ParseWarning


@dataclass(frozen=True, slots=True, kw_only=True)
class Read:
    """What a parser is told besides the text: where it comes from and what the manifest
    (or the bundle) says of it."""

    source: str
    """The name to cite (the path as the user named it)."""
    captured_at: datetime | None = None
    """The manifest's time, else the bundle's earliest: dates what has no time of its own
    (a single Prometheus scrape, year-less log times)."""
    rank: int | None = None
    """The manifest's rank for the file; a parser that reads one from the file name
    (the Flight Recorder's) lets this one win."""


# A parser of one kind: (text, what else is known of the file) -> ParseResult.
Parser = Callable[[str, Read], ParseResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class BinaryForm:
    """A kind whose files may be binary (a pickled Flight Recorder dump): told by its first
    bytes before any text is read, and parsed from the bytes."""

    magic: int
    """How many first bytes `looks_like` needs."""
    looks_like: Callable[[bytes], bool]
    parse: Callable[[bytes, Read], ParseResult]


class SniffStep(IntEnum):
    """The steps `reporter.evidence.sniff` takes, in this order; within a step it asks the
    kinds in `REGISTRY` order, and the first that names a kind wins."""

    WHOLE = 0
    """On the whole text, before its head is cut or cleaned: a `/proc` copy (NULs), pip's
    JSON, a Flight Recorder JSON dump, py-spy's JSON array. (Then `FIRST`, then the
    `markers` race.)"""
    FIRST = 1
    """A first line no other kind has (`# report-proc: fds ...`): asked before the markers'
    race, so the header decides whatever the body quotes."""
    FRAGMENT = 2
    """Dumps that lost their headers: most lines are frames."""
    DISTINCTIVE = 3
    """A distinctive header (`reporter-excerpt: 1`, `goroutine 1 [`, `Name:` ... `State:`,
    nvidia-smi's banner)."""
    STRUCTURED = 4
    """A structured document: a JSON object, `systemctl show` keys, exposition comments, a
    CSV header."""
    SHAPE = 5
    """The looser shapes: exposition samples, timestamped lines."""
    GENERIC = 6
    """Lines any text may have: KEY=VALUE, `pip freeze`, a command line."""
    LAST = 7
    """Only when nothing else matched (py-spy's error text alone)."""


# One test sniffing makes: the kind it names, or None for "not this, go on" (UNKNOWN is a
# decision: a `/proc` copy that is no known one is not read as anything else).
Detect = Callable[[str], EvidenceKind | None]


@dataclass(frozen=True, slots=True)
class Sniff:
    """One detector of a kind (or of a family of kinds) at its step."""

    step: SniffStep
    detect: Detect


def sniffed(kind: EvidenceKind, step: SniffStep, looks_like: Callable[[str], object]) -> Sniff:
    """The detector naming `kind` at `step` when `looks_like(head)` is true (a `bool`, or a
    pattern's `match`)."""
    return Sniff(step, lambda head: kind if looks_like(head) else None)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileFacts:
    """What the loader knows of one file beyond its text, for stamping its records."""

    captured_at: datetime | None = None
    """The manifest's time for the file (not the bundle's earliest)."""
    host: str = ""
    """The host the file comes from; "" when not known."""
    snapshot: int | None = None
    """The snapshot round its name says (`pid4711-s2.threads` -> 2), or None."""


# How one record takes its file's facts: (record, facts) -> record.
Stamp = Callable[[Any, FileFacts], Any]
# How the bundle finishes a field from its files' values (in merge order): the value and
# any warnings the finishing gave.
Finish = Callable[[Sequence[Any]], tuple[Any, Sequence[ParseWarning]]]


def as_read(record: Any, facts: FileFacts) -> Any:
    """The record unchanged: it carries nothing the file's facts would add."""
    return record


def dated(record: Any, facts: FileFacts) -> Any:
    """The file's time where the record has none (a goroutine dump, a Flight Recorder trace)."""
    if record.captured_at or facts.captured_at is None:
        return record
    return replace(record, captured_at=facts.captured_at)


def dated_on_host(record: Any, facts: FileFacts) -> Any:
    """`dated`, and the file's host: a process is (host, PID), so the same PID on two hosts
    is two processes."""
    record = dated(record, facts)
    return replace(record, host=facts.host) if facts.host else record


def on_host(record: Any, facts: FileFacts) -> Any:
    """The file's host, where it is known."""
    return replace(record, host=facts.host) if facts.host else record


def in_round(record: Any, facts: FileFacts) -> Any:
    """A `/proc` record with the file's time and round where it gave none, and its host."""
    return replace(
        record,
        captured_at=record.captured_at or facts.captured_at,
        snapshot=record.snapshot if record.snapshot is not None else facts.snapshot,
        host=facts.host or record.host,
    )


def flat(key: Callable[[Any], Any] | None = None) -> Finish:
    """Finish a tuple field: every file's records in merge order, sorted by `key` if given
    (a stable sort: ties keep merge order)."""

    def finish(values: Sequence[Any]) -> tuple[Any, Sequence[ParseWarning]]:
        records = [r for value in values for r in value]
        return tuple(sorted(records, key=key) if key is not None else records), ()

    return finish


_IN_ORDER = flat()


@dataclass(frozen=True, slots=True)
class FieldMerge:
    """How the bundle gathers one `Evidence` field from the files that fill it."""

    field: str
    """The `Evidence` field (`goroutine_dumps`)."""
    stamp: Stamp = as_read
    """How each record takes its file's facts."""
    capture_order: bool = False
    """Merge files in capture order (the manifest's time, then the snapshot index, then
    the file's mtime, then file order) rather than in file order: the last copy of a
    process is then its latest."""
    finish: Finish = _IN_ORDER
    """How the bundle's value is made from the files' values."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundRead:
    """A kind `report collect` reads from `/proc` for every target after every snapshot
    round, locally and on a remote host alike (`procread.read_round` yields it as `name`)."""

    name: str
    """Its name in `procread.KINDS` and the suffix of its file (`proc/pid4711-s0.fds`)."""
    says: str
    """What the manifest says the file holds; `{pid}` is the process."""
    why_missing: str = "could not be read (the process ended, or no permission)"
    """Why the manifest says a read gave nothing."""

    def missing(self, pid: int, k: int, on: str) -> tuple[str, str]:
        """What the manifest notes as skipped when the read of `pid` after snapshot `k` gave
        nothing, and why (`on`: " on <host>" or "")."""
        return f"/proc/{pid} {self.name}{on} after snapshot {k + 1}", self.why_missing

    def described(self, text: str, *, pid: int, k: int, on: str, title: str) -> str:
        """What the manifest says of the read `text` of `pid` (its `title`) after snapshot `k`."""
        return f"{self.says.format(pid=pid)} of PID {pid}{on} ({title}) after snapshot {k + 1}"


@dataclass(frozen=True, slots=True, kw_only=True)
class KindEntry:
    """One evidence kind: how it is sniffed, parsed, merged into the bundle and captured."""

    kind: EvidenceKind
    parse: Parser
    sniffs: tuple[Sniff, ...] = ()
    """How sniffing tells its files: each detector at its step (given the head, cut and
    ANSI codes removed; at `WHOLE`, the text). A family of kinds may share detectors (the
    same `Sniff` objects), asked once. (): never sniffed (the manifest must name it)."""
    markers: tuple[Marker, ...] = ()
    """Lines only its files have, raced against other kinds' markers after the `WHOLE` step:
    the earliest in the head wins, ties to the kind earlier in `REGISTRY` (py-spy's
    `Thread` lines against faulthandler's)."""
    merges: tuple[FieldMerge, ...] = ()
    """The `Evidence` fields this kind brings (and no other kind's files fill)."""
    capture: RoundRead | None = None
    """How `report collect` captures it; None: it does not."""
    binary: BinaryForm | None = None
    """Its binary form, tried on every file not declared another kind; None: text only."""
    forget: Callable[[], None] | None = None
    """Empties the caches its parser keeps while a bundle loads (the snapshots and ranks of
    a job repeat their lines); the loader calls it when a load ends, so the analysis that
    follows, and a long-running `report watch`, do not carry them. None: it keeps none."""
    kept_whole: bool = False
    """The loader keeps a file's whole text as its head, not its first lines: the upstream
    draft quotes it whole (environment-script outputs, allowlisted there)."""
    shown: str = ""
    """Where the report's evidence index says a file of this kind is shown ("bucketed under
    Clients"); "": by what the kind sets of `reporter.model.stacks` say of it."""


# Where the report's evidence index says the per-round `/proc` files are shown.
READ_FOR_WAITS = "read for the waits between processes (kept in the bundle)"


def round_read_entry(
    kind: EvidenceKind,
    *,
    name: str,
    says: str,
    field: str,
    parse: Callable[..., ParseResult],
    looks_like: Callable[[str], bool],
) -> KindEntry:
    """The entry of a per-round `/proc` kind (`proc/pid4711-s0.<name>`): sniffed first by its
    `# report-proc: <name>` line, its records (`field`) merged in capture order as
    `proc_states` are (the last copy of a process is its latest), captured as a `RoundRead`.
    `parse(text, source=...)` is the kind's parser."""
    return KindEntry(
        kind=kind,
        parse=lambda text, read: parse(text, source=read.source),
        sniffs=(sniffed(kind, SniffStep.FIRST, looks_like),),
        merges=(FieldMerge(field, stamp=in_round, capture_order=True),),
        capture=RoundRead(name=name, says=says),
        shown=READ_FOR_WAITS,
    )
