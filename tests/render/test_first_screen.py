"""The first screen, as an on-call operator reads it: every rule checked on every shipped bundle.

The first 40 lines of a report (after the front matter) say each fact once: no sentence
appears twice there, and the title (the headline) is not repeated in the summary block.
Every topic of the summary block has a line, with its evidence or an explicit "Not
known: ..."; PIDs are listed, never ranged; plurals are real. Run on every bundle under
`fixtures/bundles/` and on the good/bad folder `fixtures/envdiff/` (two runs side by side).
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import Options, load_and_analyze, render_draft
from reporter.render.answer.topics import FOLDABLE, TOPICS, UNKNOWN

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
FOLDERS = [
    *sorted(p for p in BUNDLES.iterdir() if p.is_dir()),
    ROOT / "fixtures" / "envdiff",
]
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_(])")
# A citation: `file:line`, or a metric sample by file, series and time.
_CITED = re.compile(r"\(`[^`]+`(, `[^`]+`)*\)\s*$")
_ABSENT = ("Not known: ", "No ", "No: ", "None", "Nothing")


def _draft(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([folder.relative_to(ROOT)], Options())
    return render_draft(bundle, analysis, now=NOW)


def _first_screen(text: str, lines: int = 40) -> list[str]:
    """The first `lines` lines after the front matter, without code fences' contents."""
    body = text.split("\n---\n", 1)[1].splitlines()[:lines]
    out: list[str] = []
    fenced = False
    for line in body:
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _sentences(lines: list[str]) -> list[str]:
    """The prose sentences of `lines`: markers, headings and table rows left out, list
    labels (`- **What:**`, `1.`) and trailing citations stripped."""
    out: list[str] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith(("<!--", "#", "|", ">")):
            continue
        text = re.sub(r"^(- |\d+\. )", "", text)
        text = re.sub(r"^\*\*[^*]+:\*\* ", "", text)
        text = _CITED.sub("", text)
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            if len(sentence.split()) >= 4:
                out.append(sentence)
    return out


def _summary(text: str) -> list[str]:
    start = text.index("## Summary")
    end = text.index("<!-- reporter:end id=summary -->")
    return text[start:end].splitlines()


_TOKEN = re.compile(r"[\w\[\]./:-]+")


def _tokens(sentence: str) -> set[str]:
    return {t.strip(".:").lower() for t in _TOKEN.findall(sentence)} - {""}


def _names(tokens: set[str]) -> set[str]:
    """The tokens that name something: rank sets, code, files and lines, times, values."""
    return {t for t in tokens if re.search(r"[\d_.:\[\]-]", t)}


def _inside(small: set[str], big: set[str]) -> float:
    return len(small & big) / len(small) if small else 0.0


def repeated(sentences: list[str]) -> list[tuple[str, str]]:
    """Pairs of sentences that say the same thing in other words: the shorter one's words
    (6 or more) are at least 80% inside the other's, and so are the things it names (rank
    sets, functions, file:line). Two sides of a split ("ranks [0-1] issued all_reduce",
    "ranks [2-3] issued broadcast") name different things; a step that names the places
    it asks to compare adds its own words."""
    out = []
    for i, a in enumerate(sentences):
        for b in sentences[i + 1 :]:
            ta, tb = _tokens(a), _tokens(b)
            small, big = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
            if len(small) < 6 or _inside(small, big) < 0.8:
                continue
            if _inside(_names(small), _names(big)) >= 0.9 or not _names(small):
                out.append((a, b))
    return out


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_no_sentence_twice_in_the_first_40_lines(
    folder: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Below the title, no sentence of the first 40 lines says what another says."""
    sentences = _sentences(_first_screen(_draft(folder, monkeypatch)))
    assert not repeated(sentences)


def test_the_repeat_check_catches_what_the_old_first_screen_repeated() -> None:
    """The check above fails on the first screen this project wrote before (tp_desync):
    the bold headline, the who-waits line and the verdict paragraph said one thing thrice."""
    old = [
        "TP ranks [0-1] wait in all_reduce (writing_check) for [2-3] idle in "
        "self_check_during_idle.",
        "Ranks [0-1] wait in all_reduce called at writing_check (tp_desync.py:66), from "
        "on_idle (tp_desync.py:118); for ranks [2-3] idle in self_check_during_idle "
        "(tp_desync.py:127), from on_idle (tp_desync.py:119).",
        "Ranks [0-1] wait in all_reduce at writing_check (tp_desync.py:66) for ranks [2-3] "
        "(idle in self_check_during_idle (tp_desync.py:127)).",
    ]
    assert len(repeated(old)) == 3


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_title_is_the_headline_and_is_said_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _draft(folder, monkeypatch)
    title = next(line for line in text.splitlines() if line.startswith("# "))[2:]
    plain = title.replace("\\_", "_")
    summary = "\n".join(_summary(text)).replace("\\_", "_")
    assert plain not in summary


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_topic_has_a_line_with_evidence_or_an_explicit_unknown(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [line for line in _summary(_draft(folder, monkeypatch)) if line.startswith("- **")]
    topics = [re.match(r"- \*\*([^*]+):\*\*", line).group(1) for line in lines]  # type: ignore[union-attr]
    ordered = [t for t in dict.fromkeys(topics) if t in TOPICS]
    assert ordered == [t for t in TOPICS if t in topics]
    # A topic with nothing to say is named in the one "Not known" line, with what would tell.
    folded = next((line for line in lines if line.startswith(f"- **{UNKNOWN}:** ")), "")
    named = {t for t, (short, _) in FOLDABLE.items() if folded and f"{short}" in folded}
    assert set(TOPICS) <= set(topics) | named, topics
    assert len([t for t in topics if t == UNKNOWN]) <= 1
    if folded:
        assert "would tell" in folded and len(named) >= 2, folded
    for line in lines:
        text = line.partition(":** ")[2]
        unknown = line.startswith(f"- **{UNKNOWN}:** ")
        assert unknown or text.startswith(_ABSENT) or _CITED.search(line), line
    # At most a dozen lines: the block is read at a glance.
    assert len(lines) <= 12


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_words_people_read(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _draft(folder, monkeypatch)
    screen = "\n".join(_first_screen(text))
    generated = [line for line in screen.splitlines() if not line.startswith("**") or ":**" in line]
    joined = "\n".join(generated)
    # PIDs are listed: `[8261-8262]` reads as every PID between.
    assert not re.search(r"PIDs? \[\d+-\d+", joined), joined
    # Real plurals, no `snapshot(s)`; no label said twice (`collective-desync: Collective desync:`).
    assert not re.search(r"\b\w+\(s\)", re.sub(r"TODO\(reviewer\)", "", joined)), joined
    assert not re.search(r"(?i)\b([\w-]+): \1:", joined.replace("-", " ")), joined
    assert "(absent)" not in joined


def test_two_runs_in_one_folder_put_the_top_change_on_the_first_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _draft(ROOT / "fixtures" / "envdiff", monkeypatch)
    screen = "\n".join(_first_screen(text))
    assert (
        "**Top change since the last good run:** `SGLANG_SM120_MMA_TARGET_CTAS` `256` → `512`"
        in screen
    )
    assert (
        "Two runs in one folder (told apart by their names): `good/` is the last good run" in screen
    )
    assert "set `SGLANG_SM120_MMA_TARGET_CTAS` back to `256`" in screen
    assert "nothing here shows a hang" not in screen


def _mirrored_two_servers(target: Path) -> Path:
    """two_servers with the servers' PIDs swapped: the wedged server becomes instance 1, so
    a summary that took "the first instance" or rank 0 of all instances would cite the
    healthy one (real captures, rewritten by this function)."""
    swap = {
        "30592": "30817",
        "30627": "30882",
        "30628": "30883",
        "30817": "30592",
        "30882": "30627",
        "30883": "30628",
    }
    pattern = re.compile("|".join(swap))
    for source in (BUNDLES / "two_servers").rglob("*"):
        if source.is_dir():
            continue
        rel = source.relative_to(BUNDLES / "two_servers")
        out = target / pattern.sub(lambda m: swap[m.group(0)], str(rel))
        out.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        out.write_text(pattern.sub(lambda m: swap[m.group(0)], text), encoding="utf-8")
    return target


@pytest.mark.parametrize("mirrored", [False, True], ids=["as-captured", "wedged-first"])
def test_two_servers_are_never_merged(
    mirrored: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = BUNDLES / "two_servers"
    if mirrored:
        folder = _mirrored_two_servers(tmp_path / "two_servers")
    else:
        shutil.copytree(folder, tmp_path / "two_servers")
        folder = tmp_path / "two_servers"
    monkeypatch.chdir(tmp_path)
    bundle, analysis = load_and_analyze([Path("two_servers")], Options())
    from reporter.render import answer

    built = answer.build(bundle, analysis)
    wedged = next(i for i in analysis.instances if i.verdict.value == "collective-desync")
    healthy = next(i for i in analysis.instances if i is not wedged)
    launcher = wedged.label.split("; rank PIDs")[0]
    assert built.title.startswith(launcher[0].upper() + launcher[1:] + ": ")
    assert "rank 0 waits in all_reduce (writing_check) for rank 1 idle" in built.title
    own = {str(p) for p in wedged.pids} | {launcher.split()[2]}
    other = {str(p) for p in healthy.pids} | {healthy.label.split()[2]}
    for line in built.lines:
        if line.topic == "Other instances":
            assert healthy.label.split(";")[0] in line.text
            continue
        for source in line.sources:
            assert not any(pid in source for pid in other), (line.topic, source)
        if line.topic in ("What", "Who waits for whom"):
            assert line.sources and all(any(p in s for p in own) for s in line.sources)
            # One server's two ranks, never both servers' four.
            assert "4 ranks" not in line.text and "[0-3]" not in line.text
    restart = next(s for s in built.steps if s.rule.startswith(("no-timeout", "timeout")))
    assert f"the server of {launcher}" in restart.action


@pytest.mark.parametrize(
    ("beside", "compared"),
    [
        ({}, True),
        ({"notes.txt": "on-call notes 03:12\nrolled out at 02:40, hung soon after\n"}, True),
        ({"README": "what these folders are\n", "TODO.txt": "ask infra for metrics\n"}, True),
        # A dump beside the two runs belongs to neither: the folder is not guessed at.
        ({"rank0.txt": (BUNDLES / "tp_desync/snapshots/rank0_s0.txt").read_text()}, False),
    ],
    ids=["alone", "notes", "readme-and-todo", "stray-dump"],
)
def test_two_runs_are_found_by_their_contents_whatever_notes_lie_beside(
    beside: dict[str, str], compared: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "incident"
    for side in ("good", "bad"):
        shutil.copytree(ROOT / "fixtures" / "envdiff" / side, folder / side)
    for name, text in beside.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    bundle, analysis = load_and_analyze([Path("incident")], Options())
    assert (bundle.baseline is not None) is compared
    text = render_draft(bundle, analysis, now=NOW)
    top = "**Top change since the last good run:** `SGLANG_SM120_MMA_TARGET_CTAS` `256` → `512`"
    assert (top in "\n".join(_first_screen(text))) is compared
    if compared and beside:
        assert "beside them is not evidence" in text


_PLACE = re.compile(r"\b[\w./-]+\.(?:py|go|cc|cpp|h):\d+\b")


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_no_code_place_twice_in_the_summary_block(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `file.py:line` of code is said once in the summary block (lines and steps); the
    citations in backticks at each line's end are evidence, not prose, and are left out."""
    block = [_CITED.sub("", line) for line in _summary(_draft(folder, monkeypatch))]
    places = [p for line in block for p in _PLACE.findall(line.replace("\\_", "_"))]
    repeated = sorted({p for p in places if places.count(p) > 1})
    assert not repeated, repeated


def test_a_multi_host_first_screen_names_every_host_and_the_ranks_not_captured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """two_hosts_one_lost: node-a's ranks 0-1 wait for ranks 2-3 of node-b, whose capture
    failed. The first screen names both hosts and the ranks node-b should hold, never says
    "all" of the two it has, and JSON gives each PID's host."""
    import json

    from reporter.console.documents import analysis_json

    monkeypatch.chdir(ROOT)
    folder = Path("fixtures/bundles/two_hosts_one_lost")
    bundle, analysis = load_and_analyze([folder], Options())
    text = render_draft(bundle, analysis, now=NOW)
    screen = "\n".join(_first_screen(text))
    assert "node-b: not captured (failed: ssh: connect to host node-b" in screen
    assert "ranks [2-3] should be there" in screen
    assert "Ranks [0-1] on node-a wait in all_reduce" in screen
    assert "2 of 4 ranks stuck" in screen and "All 2 ranks" not in screen
    assert "node-a: [0-1], node-b: [2-3]" in screen  # the restart names each host's ranks
    assert "**ranks [0-1] on node-a: stuck, all_reduce**" in text
    assert analysis.confidence.value == "low"
    doc = json.loads(analysis_json(analysis, bundle))
    assert doc["waits_for"][0]["waiting"]["hosts"] == ["node-a", "node-a"]
    assert any(line["topic"] == "Hosts" for line in doc["summary_lines"])


def test_two_servers_headings_and_counts_carry_the_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _draft(BUNDLES / "two_servers", monkeypatch)
    assert "of 4 ranks in 2 instances of 2 each" in text
    headings = re.findall(r"^\*\*(.+): (?:stuck|moving|idle|unknown), .+\*\*$", text, re.M)
    assert headings and all(h.startswith("launcher PID ") for h in headings), headings
