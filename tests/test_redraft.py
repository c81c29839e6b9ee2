"""Quiet re-drafts: same evidence, same bytes; the generated `signature` key follows the
evidence while the reviewers' keys stay; filing writes `upstream_issue` into the report."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import DraftResult, Options, draft, load_and_analyze
from reporter.app.upstream import record_upstream_issue
from reporter.render import frontmatter

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "fixtures" / "bundles"


def _draft(bundle: Path, out: Path, day: int) -> DraftResult:
    return draft([bundle], out=out, options=Options(), now=datetime(2026, 7, day, 9, tzinfo=UTC))


def test_same_evidence_on_another_day_changes_no_byte(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLES / "full_incident", bundle)
    out = tmp_path / "report.md"
    first = _draft(bundle, out, 12)
    assert not first.unchanged
    before = out.read_bytes()
    again = _draft(bundle, out, 19)
    assert again.unchanged and out.read_bytes() == before
    assert b"Generated on" not in before


def test_signature_follows_the_evidence_and_reviewer_keys_stay(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLES / "tp_desync", bundle)
    out = tmp_path / "report.md"
    _draft(bundle, out, 12)
    text = out.read_text(encoding="utf-8")
    old = frontmatter.parse(text)
    assert old is not None and old.data is not None
    reviewed = text.replace("status: draft", "status: in-review").replace(
        "owners: []", "owners: [ana]"
    )
    out.write_text(reviewed, encoding="utf-8")
    # The evidence changes: the same bundle now holds the dead-rank hang.
    shutil.rmtree(bundle)
    shutil.copytree(BUNDLES / "dead_rank", bundle)
    _draft(bundle, out, 13)
    new = frontmatter.parse(out.read_text(encoding="utf-8"))
    assert new is not None and new.data is not None
    assert new.data["signature"] != old.data["signature"]
    _bundle, analysis = load_and_analyze([bundle], Options())
    assert new.data["signature"] == analysis.signature.hash
    assert new.data["status"] == "in-review" and new.data["owners"] == ["ana"]


def test_filing_records_the_issue_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bundle_dir = Path("bundle")
    shutil.copytree(BUNDLES / "tp_desync", bundle_dir)
    reports = Path("reports")
    reports.mkdir()
    mine = _draft(bundle_dir, reports, 12).path
    shutil.copytree(BUNDLES / "dead_rank", Path("other"))
    other = _draft(Path("other"), reports, 12).path
    bundle, _analysis = load_and_analyze([bundle_dir], Options())
    url = "https://github.com/sgl-project/sglang/issues/4388"
    assert record_upstream_issue(bundle, url) == (mine,)
    data = frontmatter.parse(mine.read_text(encoding="utf-8"))
    assert data is not None and data.data is not None and data.data["upstream_issue"] == url
    untouched = frontmatter.parse(other.read_text(encoding="utf-8"))
    assert untouched is not None and untouched.data is not None
    assert untouched.data["upstream_issue"] is None
    # A report that already names another issue is the reviewer's choice: left alone.
    assert record_upstream_issue(bundle, url + "0") == ()
    # And a re-draft keeps the recorded issue.
    _draft(bundle_dir, reports, 12)
    again = frontmatter.parse(mine.read_text(encoding="utf-8"))
    assert again is not None and again.data is not None and again.data["upstream_issue"] == url
