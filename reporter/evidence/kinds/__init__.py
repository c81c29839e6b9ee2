"""The evidence kind registry: one `KindEntry` per kind (`interface.py`), one line each here.

Each kind's module holds its entry (how it is sniffed, parsed, merged into the bundle and
captured) and its parser or a delegation to it (`reporter.evidence.pyspy`, `.metrics`,
...). The environment files are one family (`environment.py`). Adding a kind: its
`EvidenceKind` member, its module here, its line in `REGISTRY`, its tests
(`tests/evidence/test_kinds.py` checks the rest).
"""

from __future__ import annotations

from reporter.evidence.kinds import (
    environment,
    excerpts,
    faulthandlerdump,
    flightrecorder,
    goroutines,
    grafanacsv,
    logfile,
    procfamily,
    procfds,
    procsockets,
    procstatusfile,
    procthreads,
    prometheusjson,
    prometheustext,
    pyspyjson,
    pyspytext,
    systemdshow,
    unknown,
)
from reporter.evidence.kinds.interface import Detect, KindEntry, SniffStep
from reporter.evidence.kinds.sniffing import Marker

__all__ = ["BINARY", "CAPTURED", "ENTRIES", "REGISTRY", "KindEntry", "detectors", "markers"]
from reporter.model import EvidenceKind

# Within one `SniffStep` (and in the markers' race), sniffing asks the kinds in this order:
# it decides a file that several detectors would claim (`tests/evidence/test_kinds.py`
# pins the whole table).
REGISTRY: tuple[KindEntry, ...] = (
    procthreads.ENTRY,
    procfds.ENTRY,
    procsockets.ENTRY,
    procfamily.ENTRY,
    pyspytext.ENTRY,
    faulthandlerdump.ENTRY,
    excerpts.ENTRY,
    goroutines.ENTRY,
    procstatusfile.ENTRY,
    *environment.ENTRIES,
    flightrecorder.ENTRY,
    pyspyjson.ENTRY,
    prometheusjson.ENTRY,
    systemdshow.ENTRY,
    prometheustext.ENTRY,
    grafanacsv.ENTRY,
    logfile.ENTRY,
    unknown.ENTRY,
)
ENTRIES: dict[EvidenceKind, KindEntry] = {entry.kind: entry for entry in REGISTRY}
# The kinds with a binary form, tried on each file before it is read as text.
BINARY: tuple[KindEntry, ...] = tuple(e for e in REGISTRY if e.binary is not None)
# The kinds `report collect` reads from `/proc` every round, by their `RoundRead.name`.
CAPTURED: dict[str, KindEntry] = {e.capture.name: e for e in REGISTRY if e.capture is not None}


def detectors(step: SniffStep) -> tuple[Detect, ...]:
    """The detectors of every registered kind at `step`, in registry order; one a family
    shares is asked once."""
    sniffs = dict.fromkeys(s for e in REGISTRY for s in e.sniffs if s.step is step)
    return tuple(s.detect for s in sniffs)


def markers() -> tuple[tuple[EvidenceKind, tuple[Marker, ...]], ...]:
    """(kind, markers) of every kind with markers, in registry order (the race's tie order)."""
    return tuple((e.kind, e.markers) for e in REGISTRY if e.markers)
