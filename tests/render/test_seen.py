"""Seen before: the same hang drafted twice is recognised; different hangs never are.

The second capture of the same hang is the tp_desync bundle with every PID and every
date changed (another run, another day); the different hang is the dead-rank bundle.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import Options, draft, load_and_analyze, report_status, seen_before
from reporter.console import documents
from reporter.console.report import analysis_text, status_text
from reporter.render import seen

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
DAY1 = datetime(2026, 7, 12, 9, 0, tzinfo=UTC)
DAY2 = datetime(2026, 7, 19, 16, 30, tzinfo=UTC)


def _recapture(source: Path, target: Path) -> Path:
    """`source` as if captured again: other PIDs (+5000) and another day (+4 days)."""
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="strict")
        text = re.sub(r"\b(2[0-9]{4})\b", lambda m: str(int(m.group(1)) + 5000), text)
        text = text.replace("2026-11-29", "2026-12-03")
        path.write_text(text, encoding="utf-8")
    return target


def _draft(bundle: Path, reports: Path, now: datetime) -> tuple[Path, str]:
    result = draft([bundle], out=reports, options=Options(), now=now, reports=reports)
    return result.path, result.path.read_text(encoding="utf-8")


def _summary(text: str) -> str:
    return text[text.index("## Summary") : text.index("<!-- reporter:end id=summary -->")]


def test_the_same_hang_on_another_day_is_seen_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    first_bundle = tmp_path / "run1"
    shutil.copytree(BUNDLES / "tp_desync", first_bundle)
    first, first_text = _draft(first_bundle, reports, DAY1)
    assert "**Seen before:** No: no earlier report under" in _summary(first_text)
    # A reviewer accepts an action item in the first report.
    accepted = first_text.replace(
        "- [ ] _TODO(reviewer): owner, action, due date._",
        "- [ ] ana: gate writing_check on every rank, 2026-07-20",
    )
    first.write_text(accepted, encoding="utf-8")

    second_bundle = _recapture(BUNDLES / "tp_desync", tmp_path / "run2")
    bundle, analysis = load_and_analyze([second_bundle], Options())
    assert {d.pid for d in bundle.dumps} & {26038, 26039} == set(), "other PIDs"
    second, second_text = _draft(second_bundle, reports, DAY2)
    assert second != first
    summary = _summary(second_text)
    assert "**Seen before:** Yes, second time since 2026-07-12" in summary
    assert str(first) in summary
    assert "status draft" in summary and "gate writing\\_check on every rank" in summary.replace(
        "gate writing_check", "gate writing\\_check"
    )
    # `report analyze` says it too, in its summary and in --json.
    found = seen_before(bundle, analysis, reports)
    assert [s.path for s in found.matches] == [str(first)] and found.matches[0].same
    assert found.folder == f"{reports}/" and found.read == 2  # both drafts are read
    assert "seen before: Yes, second time" in analysis_text(bundle, analysis, seen=found)
    assert '"seen_before": [' in documents.analysis_json(analysis, bundle, seen=found)


def test_different_hangs_are_never_seen_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    names = ("tp_desync", "dead_rank", "vllm_like", "rank_never_enters", "healthy_loop")
    for day, name in enumerate(names, start=1):
        bundle = tmp_path / name
        shutil.copytree(BUNDLES / name, bundle)
        _path, text = _draft(bundle, reports, datetime(2026, 7, day, tzinfo=UTC))
        assert "**Seen before:** No: " in _summary(text), name


def test_a_redraft_of_the_same_bundle_is_not_a_recurrence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    bundle = tmp_path / "run1"
    shutil.copytree(BUNDLES / "tp_desync", bundle)
    _draft(bundle, reports, DAY1)
    # Another report path for the same bundle (another day): still this incident.
    _path, text = _draft(bundle, reports, DAY2)
    assert "**Seen before:** No: none of the 1 report under" in _summary(text)


@pytest.mark.parametrize("how", ["copy", "symlink", "relative"])
def test_the_same_evidence_by_another_path_is_this_incident(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same evidence reached another way (a copy elsewhere, a link, `./run1` for
    `run1`) is one incident, by the evidence digest or the resolved folder."""
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    bundle = tmp_path / "run1"
    shutil.copytree(BUNDLES / "tp_desync", bundle)
    _draft(bundle, reports, DAY1)
    if how == "copy":
        other = tmp_path / "elsewhere" / "incident-0712"
        shutil.copytree(bundle, other)
    elif how == "symlink":
        other = tmp_path / "link"
        other.symlink_to(bundle, target_is_directory=True)
    else:
        other = Path("./run1/")
    _path, text = _draft(other, reports, DAY2)
    summary = _summary(text)
    assert "**Seen before:** No: none of the 1 report under" in summary, summary


def test_an_earlier_report_without_a_date_is_dated_by_its_evidence() -> None:
    """No date in the file name and an empty `incident_start`: the day its evidence was
    captured (its header), never "an unknown date"."""
    text = (
        "---\nkind: incident-report\nstatus: reviewed\nincident_start: null\n"
        'signature: "abc"\n---\n# t\n\n> Generated by `reporter` 0.1.0 from `b` '
        "(evidence of 2026-11-29 14:43:41 UTC).\n"
    )
    record = seen.read(text, path="reports/tp.md")
    assert record is not None and record.date == "2026-11-29"
    undated = text.replace(" (evidence of 2026-11-29 14:43:41 UTC)", "")
    record = seen.read(undated, path="reports/tp.md")
    assert record is not None and record.date == "an unknown date"


def test_shape_keeps_call_sites_and_drops_files_labels_and_outer_frames() -> None:
    text = (
        "collective-desync\nall_reduce: run (x.py) > S.check (x.py) > all_reduce (c10d.py)\n"
        "running: run (x.py) > S.on_idle (x.py) > S.sleep (x.py)"
    )
    # Another install prefix, a label renamed, one more outer frame: similar.
    similar = (
        "collective-desync\nall_reduce: main (m.py) > run (a/x.py) > check (a/x.py) > "
        "all_reduce (t/c10d.py)\nidle: run (a/x.py) > on_idle (a/x.py) > sleep (a/x.py)"
    )
    # Another call site of the same collective: a different hang.
    other = (
        "collective-desync\nall_reduce: run (x.py) > S.forward (x.py) > all_reduce (c10d.py)\n"
        "running: run (x.py) > S.on_idle (x.py) > S.sleep (x.py)"
    )
    assert (
        seen.shape(text)
        == seen.shape(similar)
        == ("collective-desync | check>all_reduce, on_idle>sleep")
    )
    assert seen.shape(other) != seen.shape(text)
    assert seen.shape("inconclusive") == ""


def test_status_groups_reports_by_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    shutil.copytree(BUNDLES / "tp_desync", tmp_path / "run1")
    _draft(tmp_path / "run1", reports, DAY1)
    _draft(_recapture(BUNDLES / "tp_desync", tmp_path / "run2"), reports, DAY2)
    shutil.copytree(BUNDLES / "dead_rank", tmp_path / "dead")
    _draft(tmp_path / "dead", reports, DAY2)
    rows = report_status(reports)
    text = status_text(rows)
    grouped = text[text.index("by signature:") :]
    assert "2 reports  2026-07-12 to 2026-07-19" in grouped
    assert "1 report   2026-07-19" in grouped


def test_status_groups_as_seen_before_does_the_same_hang_under_three_launchers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real captures of one desync started by mp.spawn, plain processes and torchrun share a
    # signature; tp_desync is the same hang in another program (other files: another
    # signature, the same shape), so status counts the four as one hang, as seen-before does.
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("launch_spawn", "launch_plain", "launch_torchrun", "tp_desync", "dead_rank"):
        shutil.copytree(BUNDLES / name, tmp_path / name)
        _draft(tmp_path / name, reports, DAY1)
    rows = report_status(reports)
    # The report's file is named from the manifest's title; its heading is the headline.
    launch = [r for r in rows if "started-by" in r.path]
    assert len(launch) == 3 and len({r.signature for r in launch}) == 1
    assert all(r.same_signature == 3 and r.same_hang == 4 for r in launch)
    dead = [r for r in rows if r.same_hang == 1]
    assert len(dead) == 1 and "rank 3" in dead[0].title.lower()
    text = status_text(rows)
    grouped = text[text.index("by signature:") :].splitlines()[1:]
    assert len(grouped) == 2 and "4 reports" in grouped[0] and "1 report " in grouped[1]
    signatures = {r.signature for r in rows if r is not dead[0]}
    assert grouped[0].startswith(", ".join(sorted(signatures)))


@pytest.mark.parametrize(
    ("keys", "groups"),
    [
        ([("a", "x"), ("b", "x"), ("c", "y")], [0, 0, 2]),
        # Transitive: a~b by shape, b~c by signature.
        ([("a", "x"), ("b", "x"), ("b", "z"), ("d", "")], [0, 0, 0, 3]),
        # Empty keys join nothing.
        ([("", ""), ("", ""), ("e", "")], [0, 1, 2]),
    ],
)
def test_same_hang_joins_on_signature_or_shape(
    keys: list[tuple[str, str]], groups: list[int]
) -> None:
    found = seen.same_hang(keys)
    # Group ids are representatives: compare the partitions, not the numbers.
    assert [found.index(g) for g in found] == [groups.index(g) for g in groups]


def test_without_stacks_seen_before_is_not_known_where_reports_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metrics-only signature cannot tell two hangs apart: "not known", never "No"."""
    monkeypatch.chdir(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    shutil.copytree(BUNDLES / "tp_desync", tmp_path / "run1")
    _draft(tmp_path / "run1", reports, DAY1)
    shutil.copytree(BUNDLES / "wedge_metrics", tmp_path / "metrics")
    _path, text = _draft(tmp_path / "metrics", reports, DAY2)
    assert "**Seen before:** Not known: without stacks the signature says too little" in (
        _summary(text)
    )
