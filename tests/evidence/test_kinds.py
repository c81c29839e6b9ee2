"""The evidence kind registry: every kind has its entry, every field its merge, and a kind
with a module of its own is named nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reporter.collect import plan, procread
from reporter.evidence import kinds, sniff
from reporter.evidence.kinds import builtin, fold
from reporter.evidence.kinds.interface import SniffPlace
from reporter.model import EvidenceKind

PACKAGE = Path(kinds.__file__).resolve().parents[2]
# Where any kind may be named: its enum and kind sets.
_ENUM = PACKAGE / "model" / "stacks.py"
# The kinds that have a module of their own (their entry is not in builtin.py).
_OWN = [e for e in kinds.REGISTRY if e not in builtin.ENTRIES]


def test_every_kind_has_exactly_one_registry_entry() -> None:
    registered = [entry.kind for entry in kinds.REGISTRY]
    assert sorted(registered) == sorted(EvidenceKind)
    assert set(sniff.PARSERS) == set(EvidenceKind)


def test_every_evidence_field_has_exactly_one_merge() -> None:
    # A new `Evidence` field without its `FieldMerge` would be dropped from every bundle.
    assert fold.unmerged() == []


def test_the_kinds_with_a_module_include_the_two_moved_and_the_proc_kinds() -> None:
    assert {e.kind for e in _OWN} >= {
        EvidenceKind.GOROUTINES,
        EvidenceKind.CODE_EXCERPT,
        EvidenceKind.PROC_THREADS,
        EvidenceKind.PROC_FDS,
        EvidenceKind.PROC_SOCKETS,
        EvidenceKind.PROC_FAMILY,
    }


@pytest.mark.parametrize("entry", _OWN, ids=lambda e: e.kind.value)
def test_a_kind_with_a_module_is_named_only_there(entry: kinds.KindEntry) -> None:
    assert entry.looks_like is not None
    own = Path(__import__(entry.looks_like.__module__, fromlist=["_"]).__file__ or "")
    name = re.compile(rf"\bEvidenceKind\.{entry.kind.name}\b")
    elsewhere = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path not in (own, _ENUM) and name.search(path.read_text(encoding="utf-8"))
    )
    assert elsewhere == [], f"{entry.kind.name} is named outside its module: {elsewhere}"


@pytest.mark.parametrize("entry", _OWN, ids=lambda e: e.kind.value)
def test_a_kind_with_a_module_is_sniffed_by_its_entry(entry: kinds.KindEntry) -> None:
    assert entry.looks_like is not None
    assert (entry.kind, entry.looks_like) in kinds.detectors(entry.sniff_place)


def test_the_round_reads_are_what_the_probe_reads() -> None:
    # The probe (stdlib only, carried to remote hosts) cannot import the registry: its
    # names must be the registry's `RoundRead`s, and the plan files each under its kind.
    reads = {e.capture.name: e.kind for e in kinds.REGISTRY if e.capture is not None}
    assert set(procread.KINDS) == set(reads)
    assert {name: kind for name, (kind, _) in plan.WAIT_FILES.items()} == reads


def test_first_place_detectors_run_before_the_dump_fragments() -> None:
    # A `# report-proc: fds` file is never taken for anything else.
    text = "# report-proc: fds pid=7 snapshot=0\n3\tpipe:[12]\n"
    assert sniff.sniff(text) is EvidenceKind.PROC_FDS
    assert {e.kind for e in kinds.REGISTRY if e.sniff_place is SniffPlace.FIRST} == {
        EvidenceKind.PROC_THREADS,
        EvidenceKind.PROC_FDS,
        EvidenceKind.PROC_SOCKETS,
        EvidenceKind.PROC_FAMILY,
    }
