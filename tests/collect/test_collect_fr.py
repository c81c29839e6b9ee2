"""`report collect --fr-dir` / `--torch-debug`: dumps copied byte for byte, ranks in the manifest."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

from reporter.analysis import analyze
from reporter.cli import cli
from reporter.load import bundle

runner = CliRunner()
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "bundles" / "fr_skipped" / "fr_timeout"


def test_fr_dir_copies_the_dumps_and_the_bundle_gives_the_verdict(tmp_path: Path) -> None:
    out = tmp_path / "b"
    result = runner.invoke(cli, ["collect", "--out", str(out), "--fr-dir", str(FIXTURE)])

    assert result.exit_code == 0, result.output
    copied = sorted((out / "fr" / "fr_timeout").iterdir())
    assert [p.name for p in copied] == [f"nccl_trace_rank_{r}" for r in range(4)]
    for path in copied:
        assert path.read_bytes() == (FIXTURE / path.name).read_bytes()
    manifest = tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    ranks = {e["path"]: e.get("rank") for e in manifest["evidence"]}
    assert ranks["fr/fr_timeout/nccl_trace_rank_3"] == 3
    assert {e["kind"] for e in manifest["evidence"]} == {"flight-recorder"}

    found = analyze(bundle.load([out]))
    assert "first mismatch (missing) at #5 on group 1" in found.summary
    assert "rank 3 never issued #5" in found.summary


def test_fr_dir_must_be_a_folder(tmp_path: Path) -> None:
    result = runner.invoke(
        cli, ["collect", "--out", str(tmp_path / "b"), "--fr-dir", str(tmp_path / "none")]
    )
    assert result.exit_code == 2
    assert "--fr-dir" in result.stderr and "not a folder" in result.stderr


def test_torch_debug_needs_an_http_url(tmp_path: Path) -> None:
    result = runner.invoke(
        cli, ["collect", "--out", str(tmp_path / "b"), "--torch-debug", "localhost:25999"]
    )
    assert result.exit_code == 2
    assert "not an http(s) URL" in result.stderr


def test_an_unreachable_debug_server_is_recorded_as_skipped(tmp_path: Path) -> None:
    out = tmp_path / "b"
    result = runner.invoke(
        cli,
        ["collect", "--out", str(out), "--torch-debug", "http://127.0.0.1:9", "--timeout", "1"],
    )
    # Nothing came back from the one source it was asked to read: incomplete, and why.
    assert result.exit_code == 1, result.output
    assert "http://127.0.0.1:9: nothing fetched (" in result.output
    manifest = tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    skipped = manifest["collect"]["skipped"]
    assert "http://127.0.0.1:9/fr_trace_json" in {s["what"] for s in skipped}
