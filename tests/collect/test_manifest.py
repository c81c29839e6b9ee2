"""The collector's bundle.toml: readable by tomllib and by the bundle loader, at every step."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reporter.collect import manifest
from reporter.collect.manifest import (
    CollectStatus,
    EventNote,
    EvidenceEntry,
    ManifestState,
    ManifestWriter,
    SkipNote,
    TargetNote,
)
from reporter.load import bundle as bundle_io
from reporter.load.manifest import TomlDocument
from reporter.model import EvidenceKind

AT = datetime(2026, 11, 29, 14, 43, 41, 973000, tzinfo=UTC)
ODD = 'quote " backslash \\ newline \n tab \t del \x7f bell \x07 ünïcode 🙂'


def _state(**changes: object) -> ManifestState:
    state = ManifestState(
        title=f"Live capture {ODD}",
        started_at=AT,
        command="report collect --out b --match 'sglang::scheduler_TP'",
        host="h1",
        tool="reporter 0.1.0",
        service="sglang",
        upstream=("sgl-project/sglang",),
        version="0.5.2",
        pyspy="py-spy 0.4.3",
        mode="non-blocking",
        ptrace="uid 0 with CAP_SYS_PTRACE",
        wedge_window=5.0,
        summary=f"summary {ODD}",
        advice=("py-spy may not read PID 7: x.", "run as root"),
        targets=(
            TargetNote(
                pid=7, ppid=1, uid=None, title=f"sglang::scheduler_TP0 {ODD}", selected_by="--match"
            ),
        ),
        evidence=(
            EvidenceEntry(
                path="pyspy/pid7-s1.txt",
                kind=EvidenceKind.PYSPY_TEXT,
                captured_at=AT + timedelta(seconds=1),
                description=ODD,
            ),
            EvidenceEntry(path="pyspy/pid7-s0.txt", kind=EvidenceKind.PYSPY_TEXT, captured_at=AT),
        ),
        skipped=(
            SkipNote(what="environment of PID 7", reason="blank", at=AT),
            SkipNote(what="environment of PID 8", reason="blank", at=AT),
            SkipNote(what=f"unit {ODD}", reason=ODD, at=AT),
        ),
        events=(EventNote(at=AT, text=f"report collect started {ODD}"),),
    )
    return replace(state, **changes)  # type: ignore[arg-type]


def test_render_round_trips_through_tomllib() -> None:
    data = tomllib.loads(manifest.render(_state()))
    assert data["title"] == f"Live capture {ODD}"
    assert data["fields"]["collection"] == f"summary {ODD}"
    assert (
        data["fields"]["skipped"]
        == f"environment of PID 7, environment of PID 8: blank; unit {ODD}: {ODD}"
    )
    assert data["wedge"] == {"window": "5s"}
    assert [e["path"] for e in data["evidence"]] == ["pyspy/pid7-s0.txt", "pyspy/pid7-s1.txt"]
    assert data["evidence"][1]["captured_at"] == AT + timedelta(seconds=1)
    collect = data["collect"]
    assert collect["status"] == "running" and "finished_at" not in collect
    assert collect["target"][0]["title"].endswith(ODD) and "uid" not in collect["target"][0]
    assert [s["what"] for s in collect["skipped"]][:2] == [
        "environment of PID 7",
        "environment of PID 8",
    ]


def test_the_loader_reads_it(tmp_path: Path) -> None:
    (tmp_path / "pyspy").mkdir()
    dump = 'Process 7: sglang::scheduler_TP0\nPython v3.11.7 (/usr/bin/python3.11)\n\nThread 7 (idle): "MainThread"\n    run (x.py:1)\n'
    for k in (0, 1):
        (tmp_path / f"pyspy/pid7-s{k}.txt").write_text(dump, encoding="utf-8")
    writer = ManifestWriter(
        root=tmp_path,
        state=_state(status=CollectStatus.COMPLETE, finished_at=AT + timedelta(seconds=5)),
    )
    writer.save()
    loaded = bundle_io.load([tmp_path])
    assert loaded.manifest.title == f"Live capture {ODD}"
    assert loaded.manifest.upstream == ("sgl-project/sglang",)
    assert loaded.manifest.wedge is not None and loaded.manifest.wedge.window_seconds == 5.0
    assert [d.captured_at for d in loaded.dumps] == [AT, AT + timedelta(seconds=1)]
    # The loader folds whitespace in event text to single spaces.
    assert [e.text for e in loaded.events] == [" ".join(f"report collect started {ODD}".split())]
    assert loaded.warnings == ()
    assert dict(loaded.manifest.fields)["ptrace"] == "py-spy may not read PID 7: x. run as root"


def test_a_bundle_is_readable_before_any_evidence(tmp_path: Path) -> None:
    writer = ManifestWriter(root=tmp_path, state=_state(evidence=()))
    writer.save()
    loaded = bundle_io.load([tmp_path])
    assert len(loaded.events) == 1  # the start event alone makes it a bundle


def test_writer_updates(tmp_path: Path) -> None:
    writer = ManifestWriter(root=tmp_path, state=_state(evidence=(), skipped=()))
    entry = EvidenceEntry(
        path="metrics/scrapes.prom", kind=EvidenceKind.PROMETHEUS_TEXT, description="1 scrape"
    )
    writer.replace_evidence(entry)
    writer.replace_evidence(
        EvidenceEntry(
            path="metrics/scrapes.prom", kind=EvidenceKind.PROMETHEUS_TEXT, description="2 scrapes"
        )
    )
    writer.skip(SkipNote(what="x", reason="y", at=AT))
    writer.event(EventNote(at=AT, text="stopped"))
    writer.update(status=CollectStatus.INTERRUPTED)
    path = writer.save()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert [e["description"] for e in data["evidence"]] == ["2 scrapes"]
    assert data["collect"]["status"] == "interrupted"
    assert len(data["event"]) == 2 and data["fields"]["skipped"] == "x: y"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_skipped_text_groups_and_caps() -> None:
    notes = [SkipNote(what=f"dump {i}", reason=f"r{i % 15}", at=AT) for i in range(30)]
    text = manifest.skipped_text(notes)
    assert text.startswith("dump 0, dump 15: r0; dump 1, dump 16: r1;")
    assert text.endswith("3 more reasons (see [collect] in bundle.toml)")
    many = [SkipNote(what=f"dump {i}", reason="same", at=AT) for i in range(6)]
    assert manifest.skipped_text(many) == "dump 0, dump 1, dump 2, dump 3 and 2 more: same"


def test_the_process_tree_is_recorded_and_read_back(tmp_path: Path) -> None:
    from reporter.collect.manifest import ProcessEntry

    state = _state(
        targets=(
            TargetNote(
                pid=7,
                ppid=5,
                uid=0,
                title="sglang::scheduler_TP0",
                selected_by="--match",
                pgid=5,
                launcher=5,
            ),
        ),
        processes=(
            ProcessEntry(
                pid=5, ppid=1, pgid=5, cmdline="python3 -m sglang.launch_server --port 30000"
            ),
        ),
        evidence=(),
    )
    data = tomllib.loads(manifest.render(state))
    assert data["collect"]["target"][0]["launcher"] == 5
    assert data["collect"]["target"][0]["pgid"] == 5
    assert data["collect"]["process"][0]["cmdline"].endswith("--port 30000")
    ManifestWriter(root=tmp_path, state=state).save()
    loaded = bundle_io.load([tmp_path])
    notes = {n.pid: n for n in loaded.manifest.processes}
    assert notes[7].ppid == 5 and notes[7].launcher == 5 and notes[7].pgid == 5
    assert notes[5].cmdline == "python3 -m sglang.launch_server --port 30000"


def test_without_a_title_the_report_is_titled_by_its_verdict(tmp_path: Path) -> None:
    # A generated "Live capture of ..." title would stand where the verdict headline goes
    # (and become an upstream issue's title): it is offered commented out instead.
    label = 'Live capture of 1 sglang process on "h1" (2026-11-29 14:43 UTC)'
    text = manifest.render(_state(title="", label=label))
    assert "title" not in tomllib.loads(text)
    offered = [line for line in text.splitlines() if line.startswith("# title = ")]
    assert len(offered) == 1 and tomllib.loads(offered[0][2:]) == {"title": label}
    assert "title" not in tomllib.loads(manifest.render(_state(title="", label=ODD)))
    (tmp_path / "pyspy").mkdir()
    dump = 'Process 7: sglang::scheduler_TP0\nPython v3.11.7 (/usr/bin/python3.11)\n\nThread 7 (idle): "MainThread"\n    run (x.py:1)\n'
    for k in (0, 1):
        (tmp_path / f"pyspy/pid7-s{k}.txt").write_text(dump, encoding="utf-8")
    ManifestWriter(root=tmp_path, state=_state(title="", label=label)).save()
    assert not bundle_io.load([tmp_path]).manifest.title


def test_kept_pieces_render_the_same_text_and_only_new_entries_are_rendered() -> None:
    pieces: manifest.Pieces = {}
    state = _state()
    assert manifest.render(state, pieces) == manifest.render(state)
    assert len(pieces) == 6  # 2 files, 1 target, 3 skips: each rendered and read back once
    kept = dict(pieces)
    more = replace(
        state,
        evidence=(
            *state.evidence,
            EvidenceEntry(path="pyspy/pid8-s0.txt", kind=EvidenceKind.PYSPY_TEXT, rank=1),
        ),
    )
    assert manifest.render(more, pieces) == manifest.render(more)
    assert len(pieces) == 7 and all(pieces[k] is v for k, v in kept.items())


def test_a_rewrite_still_reads_back_what_no_piece_holds() -> None:
    # The lines between pieces (the [collect] table) are still read back: a bad one raises.
    pieces: manifest.Pieces = {}
    bad = _state(evidence=(), targets=(), skipped=())
    text = manifest.render(bad, pieces)
    assert tomllib.loads(text)["collect"]["tool"] == "reporter 0.1.0"
    doc = TomlDocument().key("a", 1)
    doc.extend(("a = 2",))
    try:
        doc.text_of_checked([(0, 2)])
    except tomllib.TOMLDecodeError:
        pass
    else:  # pragma: no cover - the duplicate key must be refused
        raise AssertionError("a duplicate key was written")


def test_the_writer_drops_pieces_of_replaced_entries(tmp_path: Path) -> None:
    writer = ManifestWriter(root=tmp_path, state=_state(evidence=()))
    for n in range(200):
        writer.replace_evidence(
            EvidenceEntry(path="metrics.txt", kind=EvidenceKind.PYSPY_TEXT, description=f"{n}")
        )
        writer.save()
    assert len(writer._pieces) <= 64 + 2 * 5
    data = tomllib.loads((tmp_path / "bundle.toml").read_text(encoding="utf-8"))
    assert [e["description"] for e in data["evidence"]] == ["199"]
