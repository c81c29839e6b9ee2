"""The evidence kind registry: every kind has its entry, every field its merge, every kind
its module (which alone names it), and sniffing asks the kinds in the order it pins."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from reporter.collect import procread
from reporter.evidence import kinds, sniff
from reporter.evidence.kinds import fold
from reporter.evidence.kinds.interface import SniffStep
from reporter.model import ENVIRONMENT_KINDS, EvidenceKind

PACKAGE = Path(kinds.__file__).resolve().parents[2]
KINDS_DIR = Path(kinds.__file__).resolve().parent
# Where any kind may be named: its enum and kind sets.
_ENUM = PACKAGE / "model" / "stacks.py"
# Besides a kind's entry module and the parser it delegates to: the places that name a
# kind for a reason of their own, each pinned here so that a new one is a decision. The
# collectors declare the kind of the files they write into the manifest; the loader, the
# sniffer's fallback and the detectors that may find no kind name UNKNOWN.
_ALSO = {
    EvidenceKind.PYSPY_TEXT: {"collect/remote.py", "collect/torchdebug.py", "collect/capture.py"},
    EvidenceKind.FAULTHANDLER: {"collect/torchdebug.py"},
    EvidenceKind.PROMETHEUS_TEXT: {"collect/services.py"},
    EvidenceKind.PROMETHEUS_JSON: {"collect/services.py", "render/answer/series.py"},
    EvidenceKind.SYSTEMD_SHOW: {"collect/services.py"},
    EvidenceKind.LOG: {"collect/state.py"},
    EvidenceKind.FLIGHT_RECORDER: {"collect/services.py", "collect/torchdebug.py"},
    EvidenceKind.ENVIRON: {"collect/state.py"},
    EvidenceKind.CMDLINE: {"collect/state.py"},
    EvidenceKind.PACKAGES: {"collect/remote.py", "collect/capture.py"},
    EvidenceKind.UNKNOWN: {
        "load/assemble.py",
        "load/bundle.py",
        "load/manifest.py",
        "evidence/traceback.py",
        "evidence/sniff.py",
        "evidence/env/sniffing.py",
        "evidence/kinds/environment.py",
    },
}


def _module_of(entry: kinds.KindEntry) -> Path:
    """The file of the module that declares `entry` (its parser's, for the entry's lambdas)."""
    for name, module in sys.modules.items():
        if name.startswith("reporter.evidence.kinds.") and any(
            value is entry
            for value in (getattr(module, "ENTRY", None), *getattr(module, "ENTRIES", ()))
        ):
            return Path(module.__file__ or "")
    raise AssertionError(f"no module declares the entry of {entry.kind}")


def _parser_files(module: Path) -> set[Path]:
    """The parser modules an entry module delegates to (`from reporter.evidence import x`)."""
    found: set[Path] = set()
    text = module.read_text(encoding="utf-8")
    for names in re.findall(r"^from reporter\.evidence import ([\w, ]+)$", text, re.M):
        for name in names.split(","):
            base = PACKAGE / "evidence" / name.strip()
            found |= {base.with_suffix(".py")} | set(base.glob("*.py"))
    return found


def test_every_kind_has_exactly_one_registry_entry() -> None:
    registered = [entry.kind for entry in kinds.REGISTRY]
    assert sorted(registered) == sorted(EvidenceKind)
    assert set(sniff.PARSERS) == set(EvidenceKind)


def test_every_evidence_field_has_exactly_one_merge() -> None:
    # A new `Evidence` field without its `FieldMerge` would be dropped from every bundle.
    assert fold.unmerged() == []


def test_every_entry_lives_in_a_kind_module_and_no_catch_all_is_left() -> None:
    modules = {_module_of(entry) for entry in kinds.REGISTRY}
    assert all(m.parent == KINDS_DIR for m in modules)
    assert not (KINDS_DIR / "builtin.py").exists()
    # One module per kind, but the environment family shares one.
    assert len(modules) == len(EvidenceKind) - len(ENVIRONMENT_KINDS) + 1


@pytest.mark.parametrize("entry", kinds.REGISTRY, ids=lambda e: e.kind.value)
def test_a_kind_is_named_only_in_its_module_and_its_parser(entry: kinds.KindEntry) -> None:
    own = _module_of(entry)
    allowed = {own, _ENUM, *_parser_files(own)}
    name = re.compile(rf"\bEvidenceKind\.{entry.kind.name}\b")
    elsewhere = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path not in allowed and name.search(path.read_text(encoding="utf-8"))
    )
    assert set(elsewhere) <= _ALSO.get(entry.kind, set()), (
        f"{entry.kind.name} is named outside its module: {elsewhere}"
    )


def test_the_pinned_places_still_name_their_kind() -> None:
    # A place that stopped naming its kind comes off the list (it would hide a new one).
    for kind, places in _ALSO.items():
        for place in places:
            text = (PACKAGE / place).read_text(encoding="utf-8")
            assert re.search(rf"\bEvidenceKind\.{kind.name}\b", text), (kind, place)


@pytest.mark.parametrize("entry", kinds.REGISTRY, ids=lambda e: e.kind.value)
def test_every_kind_but_unknown_is_sniffed_by_its_entry(entry: kinds.KindEntry) -> None:
    if entry.kind is EvidenceKind.UNKNOWN:
        assert not entry.sniffs and not entry.markers
        return
    assert entry.sniffs or entry.markers
    for one in entry.sniffs:
        assert one.detect in kinds.detectors(one.step)


def test_sniffing_asks_the_kinds_in_this_order() -> None:
    # The order decides a file that several detectors would claim; this table is it.
    family = "environment"
    table: dict[SniffStep, list[str]] = {}
    for step in SniffStep:
        named: list[str] = []
        for entry in kinds.REGISTRY:
            if any(s.step is step for s in entry.sniffs):
                label = family if entry.kind in ENVIRONMENT_KINDS else entry.kind.value
                if label not in named:
                    named.append(label)
        table[step] = named
    assert table == {
        SniffStep.WHOLE: [family, "flight-recorder", "pyspy-json"],
        SniffStep.FIRST: ["proc-threads", "proc-fds", "proc-sockets", "proc-family"],
        SniffStep.FRAGMENT: ["pyspy-text", "faulthandler"],
        SniffStep.DISTINCTIVE: ["code-excerpt", "goroutines", "proc-status", family],
        SniffStep.STRUCTURED: [
            "prometheus-json",
            "systemd-show",
            "prometheus-text",
            "grafana-csv",
        ],
        SniffStep.SHAPE: ["prometheus-text", "log"],
        SniffStep.GENERIC: [family],
        SniffStep.LAST: ["pyspy-text"],
    }
    assert [kind for kind, _ in kinds.markers()] == [
        EvidenceKind.PYSPY_TEXT,
        EvidenceKind.FAULTHANDLER,
    ]
    # The family's three detectors are asked once each, not once per kind.
    assert len(kinds.detectors(SniffStep.GENERIC)) == 1


def test_the_round_reads_are_what_the_probe_reads() -> None:
    # The probe (stdlib only, carried to remote hosts) cannot import the registry: its
    # names must be the registry's `RoundRead`s (the capture files each under its kind).
    reads = {e.capture.name: e.kind for e in kinds.REGISTRY if e.capture is not None}
    assert set(procread.ROUND_READS) == set(reads)
    assert {name: e.kind for name, e in kinds.CAPTURED.items()} == reads
    assert reads["status"] is EvidenceKind.PROC_STATUS


def test_the_status_copy_says_its_state_and_a_gone_process() -> None:
    read = kinds.ENTRIES[EvidenceKind.PROC_STATUS].capture
    assert read is not None
    text = "Name:\tpython3\nState:\tT (stopped)\nPid:\t7\nWchan:\tdo_signal_stop\n"
    assert read.described(text, pid=7, k=1, on=" on gpu2", title="rank 3") == (
        "/proc/7/status on gpu2 after snapshot 2 (rank 3): State T (stopped); the last line"
        " is /proc/7/wchan when the process sleeps"
    )
    assert read.missing(7, 0, "") == ("/proc/7/status after snapshot 1", "the process is gone")
    fds = kinds.CAPTURED["fds"].capture
    assert fds is not None
    assert fds.missing(7, 0, "")[1].startswith("could not be read")


def test_first_step_detectors_run_before_the_dump_fragments() -> None:
    # A `# report-proc: fds` file is never taken for anything else.
    text = "# report-proc: fds pid=7 snapshot=0\n3\tpipe:[12]\n"
    assert sniff.sniff(text) is EvidenceKind.PROC_FDS
    assert {e.kind for e in kinds.REGISTRY if any(s.step is SniffStep.FIRST for s in e.sniffs)} == {
        EvidenceKind.PROC_THREADS,
        EvidenceKind.PROC_FDS,
        EvidenceKind.PROC_SOCKETS,
        EvidenceKind.PROC_FAMILY,
    }


def test_a_proc_copy_no_kind_claims_stays_unknown() -> None:
    # The environment's whole-text detector decides a NUL-separated text even when it is
    # neither environ nor cmdline: the markers after it never see it.
    text = "\x00\x00Thread 0x00007f73372636c0 (most recent call first):\x00\x00"
    assert kinds.environment.whole(text) is not None
    assert sniff.sniff(text) is kinds.environment.whole(text)
