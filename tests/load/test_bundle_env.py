"""The bundle loader with environment, excerpt and goroutine evidence, baselines and source roots."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.core.errors import EvidenceError, ManifestError
from reporter.load import bundle
from reporter.model import EvidenceKind

ROOT = Path(__file__).resolve().parents[2]
ENVDIFF = ROOT / "fixtures" / "envdiff"
AGENTS = ROOT / "fixtures" / "goroutines" / "agents"


def test_env_only_bundle_loads() -> None:
    loaded = bundle.load([ENVDIFF / "good"])
    assert {f.kind for f in loaded.files} == {
        EvidenceKind.ENVIRON,
        EvidenceKind.CMDLINE,
        EvidenceKind.PACKAGES,
    }
    assert len(loaded.environment.variables) == 338
    assert not loaded.dumps
    assert not loaded.warnings


def test_nul_separated_copies_are_text_but_binary_is_refused(tmp_path: Path) -> None:
    environ = tmp_path / "environ"
    environ.write_bytes(b"A=1\x00B=caf\xc3\xa9\x00")
    loaded = bundle.load([environ])
    assert [(v.name, v.value) for v in loaded.environment.variables] == [("A", "1"), ("B", "café")]
    core = tmp_path / "core"
    core.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00")
    with pytest.raises(EvidenceError, match="binary data"):
        bundle.load([core])
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("A=1\nB=2\n".encode("utf-16-le"))
    with pytest.raises(EvidenceError, match="binary data"):
        bundle.load([utf16])


def test_goroutine_dump_gets_the_manifest_capture_time(tmp_path: Path) -> None:
    shutil.copyfile(AGENTS / "debug2.txt", tmp_path / "agents.txt")
    (tmp_path / "bundle.toml").write_text(
        '[[evidence]]\npath = "agents.txt"\ncaptured_at = 2026-11-29T15:10:43Z\n'
    )
    loaded = bundle.load([tmp_path])
    (dump,) = loaded.goroutine_dumps
    assert dump.captured_at == datetime(2026, 11, 29, 15, 10, 43, tzinfo=UTC)
    assert loaded.files[0].kind is EvidenceKind.GOROUTINES


def test_bad_named_env_file_is_a_warning_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "env.txt").write_text("A=1\nB=2\nC=3\n")
    (tmp_path / "freeze.txt").write_text("totally not\npip output\n")
    (tmp_path / "bundle.toml").write_text(
        '[[evidence]]\npath = "env.txt"\n\n[[evidence]]\npath = "freeze.txt"\nkind = "packages"\n'
    )
    loaded = bundle.load([tmp_path])
    assert [str(w) for w in loaded.warnings] == [
        "freeze.txt:1: 2 lines (to line 2) not understood as a `pip freeze` line, "
        "starting 'totally not'"
    ]


def _bundle_with_baseline(tmp_path: Path) -> Path:
    root = tmp_path / "incident"
    shutil.copytree(ENVDIFF / "bad", root)
    shutil.copytree(ENVDIFF / "good", root / "baseline")
    (root / "source").mkdir()
    (root / "source" / "app.txt").write_text("A=1\nB=2\nC=3\n")  # would sniff as env if walked
    manifest = (root / "bundle.toml").read_text()
    manifest = manifest.replace(
        'service = "', 'baseline = "baseline/"\nsource_root = "source"\nservice = "', 1
    )
    (root / "bundle.toml").write_text(manifest)
    return root


def test_baseline_and_source_root_are_not_this_bundles_evidence(tmp_path: Path) -> None:
    loaded = bundle.load([_bundle_with_baseline(tmp_path)])
    assert all(not f.path.startswith(("baseline/", "source/")) for f in loaded.files)
    assert loaded.baseline is not None
    assert {v.value for v in loaded.baseline.environment.variables if v.name.endswith("CTAS")} == {
        "256"
    }
    assert loaded.manifest.source_root == "source"
    assert not loaded.warnings


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('baseline = "../elsewhere"', "points outside the bundle"),
        ('baseline = "/abs"', "points outside the bundle"),
        ('baseline = "missing/"', "does not exist in the bundle"),
        ('source_root = "nowhere"', "does not exist in the bundle"),
        ("[upstream_ref]\nbranch = 'main'", "unknown key `upstream_ref.branch`"),
        ("[upstream_ref]\ntag = 5", "`upstream_ref.tag` must be a string"),
    ],
)
def test_bad_manifest_keys(tmp_path: Path, line: str, message: str) -> None:
    shutil.copyfile(ENVDIFF / "good" / "pip-freeze.txt", tmp_path / "freeze.txt")
    (tmp_path / "bundle.toml").write_text(line + "\n")
    with pytest.raises(ManifestError, match=message.replace("[", r"\[")):
        bundle.load([tmp_path])


def test_upstream_ref_is_kept_in_order(tmp_path: Path) -> None:
    shutil.copyfile(ENVDIFF / "good" / "pip-freeze.txt", tmp_path / "freeze.txt")
    (tmp_path / "bundle.toml").write_text(
        '[upstream_ref]\npackage = "sglang"\ntag = "v{version}"\npath_prefix = "python/"\n'
    )
    loaded = bundle.load([tmp_path])
    assert loaded.manifest.upstream_ref == (
        ("package", "sglang"),
        ("tag", "v{version}"),
        ("path_prefix", "python/"),
    )


def test_load_baseline_file_and_missing(tmp_path: Path) -> None:
    single = bundle.load_baseline(ENVDIFF / "good" / "proc" / "environ")
    assert len(single.environment.variables) == 338
    with pytest.raises(ManifestError, match="does not exist"):
        bundle.load_baseline(tmp_path / "nope")
