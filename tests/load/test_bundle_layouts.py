"""A folder without its own bundle.toml: two runs side by side, or a bundle one level down.

Never silently ignored: two runs are compared as `--baseline` would (and the bundle says
how they were told apart), a bundle one level down is used with a warning, several are
named in a warning with a Tip.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reporter.app.report import Options, load_and_analyze
from reporter.load import bundle as bundle_io

ROOT = Path(__file__).resolve().parents[2]
ENVDIFF = ROOT / "fixtures" / "envdiff"
BUNDLES = ROOT / "fixtures" / "bundles"


def _copy_runs(tmp_path: Path, good: str, bad: str) -> Path:
    folder = tmp_path / "runs"
    shutil.copytree(ENVDIFF / "good", folder / good)
    shutil.copytree(ENVDIFF / "bad", folder / bad)
    return folder


def test_good_and_bad_folders_are_compared_as_baseline_would() -> None:
    loaded = bundle_io.load([ENVDIFF])
    assert loaded.root is not None and loaded.root.endswith("envdiff/bad")
    assert loaded.baseline is not None and str(loaded.baseline.root).endswith("envdiff/good")
    assert "`good/` is the last good run, `bad/` this one" in loaded.baseline_note
    assert "told apart by their names" in loaded.baseline_note
    # The same ranking as `report diff good bad`.
    _bundle, analysis = load_and_analyze([ENVDIFF], Options())
    assert analysis.diff is not None
    assert analysis.diff.changes[0].key == "SGLANG_SM120_MMA_TARGET_CTAS"


@pytest.mark.parametrize(("good", "bad"), [("before", "after"), ("Baseline", "incident-0712")])
def test_other_names_for_two_runs(tmp_path: Path, good: str, bad: str) -> None:
    loaded = bundle_io.load([_copy_runs(tmp_path, good, bad)])
    assert loaded.root is not None and loaded.root.endswith(bad)
    assert loaded.baseline is not None and f"`{good}/` is the last good run" in loaded.baseline_note


def test_an_explicit_baseline_wins_and_drops_the_note() -> None:
    bundle, _analysis = load_and_analyze(
        [ENVDIFF], Options(baseline=ENVDIFF / "bad" / "proc" / "environ")
    )
    assert bundle.baseline_note == ""


def test_evidence_beside_two_runs_stops_the_guess(tmp_path: Path) -> None:
    folder = _copy_runs(tmp_path, "good", "bad")
    shutil.copy(BUNDLES / "tp_desync" / "snapshots" / "rank0_s0.txt", folder / "rank0.txt")
    loaded = bundle_io.load([folder])
    assert loaded.baseline is None and loaded.baseline_note == ""
    assert loaded.root == str(folder)


def test_loose_files_named_for_two_runs(tmp_path: Path) -> None:
    folder = tmp_path / "envs"
    folder.mkdir()
    shutil.copy(ENVDIFF / "good" / "proc" / "environ", folder / "good.environ")
    shutil.copy(ENVDIFF / "bad" / "proc" / "environ", folder / "environ-bad")
    loaded = bundle_io.load([folder])
    assert [f.path for f in loaded.files] == [str(folder / "environ-bad")]
    assert loaded.baseline is not None
    assert "`good.environ` is the last good run" in loaded.baseline_note


def _dated(folder: Path, when: str) -> None:
    manifest = folder / "bundle.toml"
    text = manifest.read_text(encoding="utf-8")
    text = text.replace("captured_at = 2026-11-29T15:09:53.740Z", f"captured_at = {when}")
    text = text.replace("captured_at = 2026-11-29T15:09:52.062Z", f"captured_at = {when}")
    manifest.write_text(text, encoding="utf-8")


def test_two_unnamed_runs_by_capture_time(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    shutil.copytree(ENVDIFF / "bad", folder / "run-b")
    shutil.copytree(ENVDIFF / "good", folder / "run-a")
    # run-b (the bad run's files) was captured a day after run-a: run-a is the good one.
    _dated(folder / "run-a", "2026-11-28T10:00:00Z")
    _dated(folder / "run-b", "2026-11-29T10:00:00Z")
    loaded = bundle_io.load([folder])
    assert loaded.root is not None and loaded.root.endswith("run-b")
    assert "told apart by capture time" in loaded.baseline_note


def test_two_captures_minutes_apart_are_not_two_runs(tmp_path: Path) -> None:
    # Two hosts of one job, captured together: never taken for a good and a bad run.
    folder = tmp_path / "hosts"
    shutil.copytree(ENVDIFF / "bad", folder / "host-a")
    shutil.copytree(ENVDIFF / "good", folder / "host-b")
    _dated(folder / "host-a", "2026-11-29T10:00:00Z")
    _dated(folder / "host-b", "2026-11-29T10:03:00Z")
    loaded = bundle_io.load([folder])
    assert loaded.baseline is None
    assert any("2 bundles one level down" in w.message for w in loaded.warnings)
    assert any("Tip: pass one bundle folder" in w.message for w in loaded.warnings)


def test_the_only_bundle_one_level_down_is_used(tmp_path: Path) -> None:
    folder = tmp_path / "incident"
    shutil.copytree(BUNDLES / "tp_desync", folder / "bundle-0712")
    loaded = bundle_io.load([folder])
    assert loaded.root == str(folder / "bundle-0712")
    assert loaded.manifest.title  # the manifest was read
    (note,) = [w for w in loaded.warnings if "holds one bundle" in w.message]
    assert note.source.path == "bundle-0712/bundle.toml"
    assert "is used. Tip: pass" in note.message


def test_a_bundle_one_level_down_beside_other_evidence_lends_its_file_list() -> None:
    # two_servers: loose dumps, --subprocesses dumps and `report collect`'s bundle in collect/.
    loaded = bundle_io.load([BUNDLES / "two_servers"])
    assert loaded.root == str(BUNDLES / "two_servers")
    assert not loaded.manifest.title  # collect/'s title speaks for part of the folder
    assert loaded.manifest.processes  # its process tree is used
    listed = [f for f in loaded.files if f.path.startswith("collect/pyspy/")]
    assert listed and all(f.captured_at is not None for f in listed)
    (note,) = [w for w in loaded.warnings if w.source.path == "collect/bundle.toml"]
    assert "the one in collect/ is used for the files it lists" in note.message
    # Files outside collect/ are not "unlisted" evidence of that manifest.
    assert not any(
        "not listed" in w.message and not w.source.path.startswith("collect/")
        for w in loaded.warnings
    )
