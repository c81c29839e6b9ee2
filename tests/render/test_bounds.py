"""Reports stay bounded at any rank count: past `MAX_SHOWN` processes the report draws one
dump per class plus the named ranks, counts the rest and says where they are; small
bundles are untouched (the goldens); a reviewer's edits survive a bounded re-draft."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from reporter.app.report import Options, draft
from reporter.render import bounds

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from generate_bundle import generate  # noqa: E402

# More ranks than either bound: processes drawn (`MAX_SHOWN`) and index rows (`MAX_INDEX_ROWS`).
RANKS = max(2 * bounds.MAX_SHOWN, bounds.MAX_INDEX_ROWS) + 8


def _draft(bundle: Path, out: Path) -> str:
    # Earlier reports are looked for in an empty folder beside the report, never the
    # checkout's reports/ (the README's first command writes one there).
    earlier = out.parent / "earlier-reports"
    earlier.mkdir(exist_ok=True)
    draft(
        [bundle],
        out=out,
        options=Options(),
        now=datetime(2026, 7, 1, tzinfo=UTC),
        reports=earlier,
    )
    return out.read_text(encoding="utf-8")


def _bundle(tmp_path: Path, ranks: int) -> Path:
    folder = tmp_path / "bundle"
    generate(folder, ranks=ranks, threads=2, snapshots=2)
    return folder


def test_a_large_bundle_draws_one_dump_per_class_and_says_where_the_rest_are(
    tmp_path: Path,
) -> None:
    text = _draft(_bundle(tmp_path, RANKS), tmp_path / "r.md")
    drawn = text.count("<details><summary>rank ")
    assert 2 <= drawn <= bounds.MAX_SHOWN  # one per class at least, never more than the bound
    assert "more processes: their dumps are in the bundle" in text
    # The index: a row per run of files alike, the drawn ones and the ones left out.
    assert f"({drawn} files) | pyspy-text | dumps of rank " in text
    assert f"({RANKS - drawn} files) | pyspy-text | kept in the bundle (its class" in text
    assert "stay whole in the bundle" in text and "report analyze --json" in text
    assert "… and " in text and "more differing only in numbers" in text  # command lines
    # Every rank is still accounted for: the rows drawn plus the one counting the rest.
    assert text.count("| scheduler |") + text.count("| … |") == drawn + 1


def test_the_report_grows_slower_than_the_rank_count(tmp_path: Path) -> None:
    small = _draft(_bundle(tmp_path / "a", RANKS), tmp_path / "a.md")
    large = _draft(_bundle(tmp_path / "b", 4 * RANKS), tmp_path / "b.md")
    assert len(large) < 1.3 * len(small)


def test_a_small_bundle_is_drawn_in_full(tmp_path: Path) -> None:
    text = _draft(_bundle(tmp_path, 8), tmp_path / "r.md")
    assert text.count("<details><summary>rank ") == 8
    assert "more processes" not in text and "differing only in numbers" not in text


def test_a_reviewers_edit_survives_a_bounded_redraft(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, RANKS)
    out = tmp_path / "r.md"
    text = _draft(bundle, out)
    start = text.index("## Environment seen in the dumps")
    edited = text[:start] + text[start:].replace(
        "Python: 3.11.7.", "Python: 3.11.7. Reviewer: the TP0 host was drained at 09:12.", 1
    )
    out.write_text(edited, encoding="utf-8")
    again = _draft(bundle, out)
    assert "Reviewer: the TP0 host was drained at 09:12." in again
    assert again.count("more processes: their dumps are in the bundle") == 1


def test_shapes_of_command_lines_and_index_groups() -> None:
    lines = [f"python -m sglang.launch_server --tp-rank {n}" for n in range(100)] + ["other"]
    drawn = bounds.command_lines(lines)
    assert drawn == [
        lines[0],
        "… and 99 more differing only in numbers, to python -m sglang.launch_server --tp-rank 99",
        "other",
    ]
    assert bounds.command_lines(lines[:3]) == lines[:3]
    rows = [(f"r{n}.txt", "pyspy-text", f"dumps of rank {n}") for n in range(3)]
    rows.append(("env.txt", "environ", "summarised"))
    assert bounds.grouped_index(rows) == [
        ("r0.txt", "r2.txt", 3, "pyspy-text", "dumps of rank 0, 1, 2"),
        ("env.txt", "env.txt", 1, "environ", "summarised"),
    ]
    many = [(f"r{n}.txt", "pyspy-text", f"dumps of rank {n}") for n in range(4096)]
    assert bounds.grouped_index(many) == [
        ("r0.txt", "r4095.txt", 4096, "pyspy-text", "dumps of rank 0 to 4095 (4,096 in all)")
    ]
