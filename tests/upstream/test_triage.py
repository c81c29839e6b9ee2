"""Triage: an issue's likely duplicates from the index (never itself), a pasted issue
that does not find itself, `--since` tables, and the possible-duplicates comment posted
at most once, over the local GitHub-like server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.app import issues
from reporter.app.issues import GitHubAccess
from reporter.cli import cli
from reporter.core.errors import UsageError
from reporter.upstream import search, triage
from reporter.upstream.filing import HttpTracker
from reporter.upstream.index import Index
from reporter.upstream.query import query_from_text
from reporter.upstream.records import IssueRecord

from .ghserver import GitHubServer

REPO = "vllm-project/vllm"
runner = CliRunner()
CHECKLIST = (
    "### Your current environment\n\nCollecting environment information...\n"
    "PyTorch version: 2.5.1+cu124\nIs debug build: False\n\n"
    "### Before submitting a new issue...\n\n"
    "- [x] Make sure you already searched for relevant issues, and asked the chatbot.\n"
)


def _issues() -> list[IssueRecord]:
    out = [
        IssueRecord(
            repo=REPO,
            number=100,
            title="[Bug]: Engine hangs forever after CUDA OOM during prefill",
            body=CHECKLIST + "After an out of memory error in prefill the engine never answers.",
            created_at="2025-01-05T00:00:00Z",
            updated_at="2025-01-05T00:00:00Z",
        ),
        IssueRecord(
            repo=REPO,
            number=200,
            title="[Bug]: server stuck after running out of GPU memory while prefilling",
            body=CHECKLIST
            + "Once memory runs out in prefill, no request completes anymore. Like #100?",
            created_at="2025-02-10T00:00:00Z",
            updated_at="2025-02-10T00:00:00Z",
        ),
    ]
    topics = [
        "LoRA adapters fail to load from S3",
        "Tokenizer mismatch for Qwen chat template",
        "Speculative decoding slower than baseline",
        "Docker image misses flash-attn wheel",
        "Prometheus metrics miss queue time",
        "AWQ quantized model produces garbage output",
    ]
    for n, topic in enumerate(topics, start=300):
        out.append(
            IssueRecord(
                repo=REPO,
                number=n,
                title=f"[Bug]: {topic}",
                body=CHECKLIST + f"Details about {topic.lower()}.",
                created_at=f"2025-02-{n - 290:02d}T00:00:00Z",
                updated_at=f"2025-02-{n - 290:02d}T00:00:00Z",
            )
        )
    return out


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "triage.sqlite3"
    with Index(path) as index:
        index.upsert(_issues())
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("vllm-project/vllm#200", (REPO, 200)),
        ("https://github.com/vllm-project/vllm/issues/200", (REPO, 200)),
        (" sgl-project/sglang#4388 ", ("sgl-project/sglang", 4388)),
        ("vllm-project/vllm", None),
        ("vllm-project/vllm#0", None),
        ("fixtures/bundles/tp_desync", None),
    ],
)
def test_issue_references(text: str, expected: tuple[str, int] | None) -> None:
    assert triage.parse_issue_ref(text) == expected


def test_an_issue_finds_its_duplicate_and_never_itself(db: Path) -> None:
    outcome = issues.run_triage(
        f"{REPO}#200", since=None, text=None, limit=5, db=db, access=GitHubAccess(env={})
    )
    (row,) = outcome.rows
    numbers = [c.issue.record.number for c in row.candidates]
    assert 200 not in numbers
    assert numbers[0] == 100


def test_a_pasted_issue_does_not_rank_itself(db: Path) -> None:
    with Index(db) as index:
        record = index.issue(REPO, 200)
        assert record is not None
        query = query_from_text(f"{record.title}\n{record.body}", repos=(REPO,), title=record.title)
        notes: list[str] = []
        found = search.search_and_explain(index, query, limit=5, notes=notes)
        assert 200 not in [c.issue.record.number for c in found]
        assert found[0].issue.record.number == 100
        assert any(f"left out {REPO}#200: the pasted text is that issue" in n for n in notes)
        # Without the pasted-self rule it would have been first: the rule is what keeps it out.
        raw = search.find_duplicates(index, query, limit=5)
        assert raw[0].issue.record.number == 200


def test_an_issue_reference_is_a_search_query(db: Path) -> None:
    result = runner.invoke(cli, ["search-upstream", f"{REPO}#200", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    numbers = [c["number"] for c in document["candidates"]]
    assert 200 not in numbers and numbers[0] == 100
    assert document["query"]["issue"] == f"{REPO}#200"
    missing = runner.invoke(cli, ["search-upstream", f"{REPO}#999", "--db", str(db)])
    assert missing.exit_code != 0
    assert f"{REPO}#999: not in the index" in missing.output


def test_since_makes_one_markdown_table(db: Path) -> None:
    result = runner.invoke(cli, ["triage", REPO, "--since", "2025-02-10", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["| Issue | Title | Possible duplicates |", "| --- | --- | --- |"]
    rows = lines[2:]
    # #200 (opened 02-10) and the six issues opened after it; #100 is older.
    assert len(rows) == 7
    assert rows[0].startswith(f"| [{REPO}#200](https://github.com/{REPO}/issues/200) |")
    assert f"[#100](https://github.com/{REPO}/issues/100)" in rows[0]
    assert not any(r.startswith(f"| [{REPO}#100]") for r in rows)
    as_json = runner.invoke(
        cli, ["triage", REPO, "--since", "2025-02-10T00:00:00Z", "--db", str(db), "--json"]
    )
    document = json.loads(as_json.stdout)
    assert document["issues"][0]["number"] == 200
    for issue in document["issues"]:
        assert issue["number"] not in [c["number"] for c in issue["candidates"]]


def test_triage_refuses_what_it_cannot_do(db: Path) -> None:
    with pytest.raises(UsageError, match="name an issue or a period"):
        issues.run_triage(REPO, since=None, text=None, limit=5, db=db, access=GitHubAccess(env={}))
    with pytest.raises(UsageError, match="work on one issue"):
        issues.run_triage(
            REPO,
            since="2025-01-01",
            text=None,
            limit=5,
            db=db,
            access=GitHubAccess(env={}),
            post=True,
        )
    with pytest.raises(UsageError, match="not a date"):
        issues.run_triage(
            REPO, since="last tuesday", text=None, limit=5, db=db, access=GitHubAccess(env={})
        )
    with pytest.raises(UsageError, match="no issues of other/repo"):
        issues.run_triage(
            "other/repo#1", since=None, text=None, limit=5, db=db, access=GitHubAccess(env={})
        )


def test_text_file_triage(db: Path, tmp_path: Path) -> None:
    text = tmp_path / "new.md"
    text.write_text(
        "Engine never responds after prefill runs out of GPU memory\n\n" + CHECKLIST, "utf-8"
    )
    result = runner.invoke(
        cli, ["triage", REPO, "--text-file", str(text), "--db", str(db), "--json"]
    )
    assert result.exit_code == 0, result.output
    (issue,) = json.loads(result.stdout)["issues"]
    assert issue["number"] is None
    # #200 says it in other words; #100 is weaker (under the text cut-off) and not listed.
    assert issue["candidates"][0]["number"] == 200
    assert all(c["level"] != "weak" for c in issue["candidates"])


def test_the_comment_is_posted_once(db: Path, ghserver: GitHubServer) -> None:
    ghserver.add_issue(REPO, 200, title="server stuck after running out of GPU memory")
    tracker = HttpTracker(base_url=ghserver.url, token="t0k", pace=False)
    try:
        dry = issues.run_triage(
            f"{REPO}#200",
            since=None,
            text=None,
            limit=5,
            db=db,
            access=GitHubAccess(env={}),
            comment=True,
        )
        assert dry.comment is not None and dry.comment.body is not None
        assert dry.comment.skipped == "dry run (pass --post to post it)"
        assert ghserver.posts() == []
        body = dry.comment.body
        assert body.startswith(triage.MARKER)
        assert f"[#100](https://github.com/{REPO}/issues/100)" in body

        first = issues.run_triage(
            f"{REPO}#200",
            since=None,
            text=None,
            limit=5,
            db=db,
            access=GitHubAccess(env={}),
            post=True,
            tracker=tracker,
        )
        assert first.comment is not None and first.comment.posted_url is not None
        assert len(ghserver.posts("/comments")) == 1
        second = issues.run_triage(
            f"{REPO}#200",
            since=None,
            text=None,
            limit=5,
            db=db,
            access=GitHubAccess(env={}),
            post=True,
            tracker=tracker,
        )
        assert second.comment is not None and second.comment.posted_url is None
        assert "has a possible-duplicates comment already" in (second.comment.skipped or "")
        assert len(ghserver.posts("/comments")) == 1
    finally:
        tracker.close()


def test_already_posted_looks_for_the_marker_only() -> None:
    assert triage.already_posted(["thanks", f"{triage.MARKER}\nPossible duplicates"])
    assert not triage.already_posted(["Possible duplicates: #12", "<!-- other-bot -->"])
    assert not triage.already_posted([])


def test_titles_in_a_comment_do_not_ping_or_link() -> None:
    assert triage._neutral("ask @alice about #123") == "ask @\u200dalice about #\u200d123"
