""" "Seen again" in an open report (`render/seenagain.py`) and the disk budget of captures."""

from __future__ import annotations

import json
from pathlib import Path

from reporter.app.watch import keep_budget
from reporter.render import regions, seenagain

REPORT = regions.seal(
    '---\nkind: incident-report\nstatus: draft\nsignature: "abc"\n---\n'
    "<!-- reporter:begin id=title -->\n# Hang\n<!-- reporter:end id=title -->\n\n"
    "<!-- reporter:begin id=summary -->\n## Summary\n\nStuck.\n<!-- reporter:end id=summary -->\n\n"
    "## Impact\n\nReviewer text.\n\n"
    "<!-- reporter:begin id=verdict -->\n## Verdict\n\nDesync.\n<!-- reporter:end id=verdict -->\n"
)
ONE = seenagain.Occurrence(at="2026-12-07T13:40:01.000Z", text="bundle `/c/a`; Hang")
TWO = seenagain.Occurrence(at="2026-12-07T15:02:11.000Z", text="bundle `/c/b`; Hang")


def test_added_after_the_summary_and_the_record_stays_last() -> None:
    text = seenagain.add(REPORT, ONE)
    assert text.index("## Summary") < text.index("## Seen again") < text.index("## Impact")
    assert "(once more):\n\n- 2026-12-07T13:40:01.000Z: bundle `/c/a`; Hang\n" in text
    assert text.rstrip("\n").splitlines()[-1].startswith("<!-- reporter:regions known=")
    # Everything that was there is still there, byte for byte.
    inserted = "\n" + regions.region_text("seen-again", seenagain.body([ONE]))
    assert text.replace(inserted, "", 1) == REPORT
    again = seenagain.add(text, TWO)
    assert again.count("## Seen again") == 1 and "(2 more times)" in again
    assert seenagain.occurrences(again) == (ONE, TWO)
    # The same occurrence twice is one.
    assert seenagain.add(again, TWO) == again


def test_an_edited_region_is_kept_and_the_newer_list_offered() -> None:
    text = seenagain.add(REPORT, ONE)
    edited = text.replace("(once more):", "(once more): same as INC-7, see runbook.")
    out = seenagain.add(edited, TWO)
    assert "same as INC-7, see runbook." in out
    assert "reporter: newer generated text for seen-again" in out
    assert seenagain.occurrences(out) == (ONE, TWO)
    # A third capture replaces the untouched offer, never stacks them.
    three = seenagain.Occurrence(at="2026-12-08T01:00:00.000Z", text="bundle `/c/c`; Hang")
    later = seenagain.add(out, three)
    assert later.count("reporter:offer id=seen-again") == 1
    assert "same as INC-7, see runbook." in later
    assert len(seenagain.occurrences(later)) == 3


def test_a_redraft_keeps_the_seen_again_region() -> None:
    """`report draft` into the report: its template has no seen-again region; it stays."""
    text = seenagain.add(REPORT, ONE)
    merged = regions.merge(text, REPORT)
    assert "## Seen again" in merged.text and "seen-again" not in merged.retired
    assert seenagain.occurrences(merged.text) == (ONE,)


def test_open_statuses() -> None:
    assert seenagain.is_open("draft") and seenagain.is_open("filed")
    assert not seenagain.is_open("closed") and not seenagain.is_open("resolved")


def _capture(out: Path, name: str, signature: str, size: int) -> Path:
    folder = out / name
    folder.mkdir(parents=True)
    (folder / "watch.json").write_text(json.dumps({"signature": signature}))
    (folder / "dump.txt").write_bytes(b"x" * size)
    return folder


def test_the_budget_drops_oldest_first_but_never_the_newest_of_a_signature(
    tmp_path: Path,
) -> None:
    a1 = _capture(tmp_path, "20261201T000000Z-wedge", "aaa", 1000)
    b1 = _capture(tmp_path, "20261202T000000Z-wedge", "bbb", 1000)
    a2 = _capture(tmp_path, "20261203T000000Z-wedge", "aaa", 1000)
    a3 = _capture(tmp_path, "20261204T000000Z-wedge", "aaa", 1000)
    other = tmp_path / "not-a-capture"
    other.mkdir()
    (other / "big").write_bytes(b"y" * 5000)
    removed = keep_budget(tmp_path, 2500)
    assert removed == [a1, a2]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([b1.name, a3.name, "not-a-capture"])
    # Over budget with only the newest of each signature left: both stay.
    assert keep_budget(tmp_path, 10) == []
    assert b1.exists() and a3.exists()
    assert other.exists()
