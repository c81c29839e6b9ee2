"""The evidence kind registry: one `KindEntry` per kind (`interface.py`), one line each here.

A kind with a module of its own (`goroutines.py`, `excerpts.py`, the `/proc` kinds) holds
there its parser and its entry: how it is sniffed, parsed, merged into the bundle and
captured. The older kinds (py-spy, faulthandler, metrics, logs, environment files, ...)
have their entries in `builtin.py`; `reporter.evidence.sniff` still tells them apart with
its own marker and detector table. Adding a kind: its `EvidenceKind` member, its module
here, its line in `REGISTRY`, its tests (`tests/evidence/test_kinds.py` checks the rest).
"""

from __future__ import annotations

from collections.abc import Callable

from reporter.evidence.kinds import (
    builtin,
    excerpts,
    goroutines,
    procfamily,
    procfds,
    procsockets,
    procthreads,
)
from reporter.evidence.kinds.interface import KindEntry, SniffPlace

__all__ = ["BINARY", "ENTRIES", "REGISTRY", "KindEntry", "detectors"]
from reporter.model import EvidenceKind

# Within one `SniffPlace`, sniffing asks the kinds in this order.
REGISTRY: tuple[KindEntry, ...] = (
    procthreads.ENTRY,
    procfds.ENTRY,
    procsockets.ENTRY,
    procfamily.ENTRY,
    excerpts.ENTRY,
    goroutines.ENTRY,
    *builtin.ENTRIES,
)
ENTRIES: dict[EvidenceKind, KindEntry] = {entry.kind: entry for entry in REGISTRY}
# The kinds with a binary form, tried on each file before it is read as text.
BINARY: tuple[KindEntry, ...] = tuple(e for e in REGISTRY if e.binary is not None)


def detectors(place: SniffPlace) -> tuple[tuple[EvidenceKind, Callable[[str], bool]], ...]:
    """(kind, `looks_like`) of every registered kind sniffed at `place`, in registry order."""
    return tuple(
        (e.kind, e.looks_like)
        for e in REGISTRY
        if e.looks_like is not None and e.sniff_place is place
    )
