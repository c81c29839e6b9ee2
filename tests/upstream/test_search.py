"""The search use case and the CLI commands: example index, JSON shape, import/export, sync."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.analysis import analyze
from reporter.app import issues
from reporter.cli import cli
from reporter.load.bundle import load
from reporter.upstream import search
from reporter.upstream.index import Index
from reporter.upstream.query import query_from_analysis, query_from_text
from reporter.upstream.rank import Candidate, Level
from reporter.upstream.records import IssueRecord

from .conftest import EXAMPLE_ISSUES, ROOT, TP_DESYNC
from .ghserver import GitHubServer

runner = CliRunner()
DUPLICATES = {4101, 4388, 4512, 4620}


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user cache dir (platformdirs reads XDG_CACHE_HOME) and no token."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GH_CONFIG_DIR", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def test_the_tp_desync_duplicates_rank_first(example_index: Index) -> None:
    bundle = load([TP_DESYNC])
    query = query_from_analysis(bundle, analyze(bundle))
    ranked = search.find_duplicates(example_index, query, limit=10)
    numbers = [c.issue.record.number for c in ranked]
    assert set(numbers[:4]) == DUPLICATES
    likely = [c.issue.record.number for c in ranked if c.level is Level.LIKELY_DUPLICATE]
    assert set(likely) <= DUPLICATES and len(likely) >= 3


def test_bm25_alone_is_a_different_ranking(example_index: Index) -> None:
    bundle = load([TP_DESYNC])
    query = query_from_analysis(bundle, analyze(bundle))
    ranked = search.find_duplicates(example_index, query, limit=10, method=search.Method.BM25)
    assert ranked and all(c.reasons.shared_frames == () for c in ranked)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)


def test_a_pasted_traceback_finds_its_duplicates(example_index: Index) -> None:
    text = """Scheduler dies after 10 minutes idle

Traceback (most recent call last):
  File "/opt/sglang/srt/managers/scheduler.py", line 1190, in on_idle
    self.check_hicache_events()
  File "/opt/sglang/srt/managers/scheduler.py", line 1602, in check_hicache_events
    self.tree_cache.writing_check()
  File "/opt/sglang/srt/mem_cache/hiradix_cache.py", line 187, in writing_check
    torch.distributed.all_reduce(queue_size)
RuntimeError: NCCL timeout
"""
    ranked = search.find_duplicates(
        example_index, query_from_text(text, repos=["sgl-project/sglang"])
    )
    assert {c.issue.record.number for c in ranked[:3]} <= DUPLICATES


def test_search_outside_the_named_repos_finds_nothing(example_index: Index) -> None:
    bundle = load([TP_DESYNC])
    query = query_from_analysis(bundle, analyze(bundle), repos=["pytorch/pytorch"])
    ranked = search.find_duplicates(example_index, query, limit=10, include_weak=True)
    assert {c.issue.record.repo for c in ranked} <= {"pytorch/pytorch"}


def test_cli_offline_builds_the_example_index_and_prints_json(cache_home: Path) -> None:
    result = runner.invoke(
        cli, ["search-upstream", str(TP_DESYNC), "--offline", "--json", "--limit", "4"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    first = document["candidates"][0]
    assert list(first) == [
        "repo",
        "number",
        "title",
        "state",
        "url",
        "score",
        "level",
        "reasons",
        "rank_in_repo",
        "fixed_in",
    ]
    assert {c["number"] for c in document["candidates"]} == DUPLICATES
    assert first["level"] == "likely-duplicate"
    assert set(first["reasons"]) == {"scores", "shared_frames", "terms", "notes"}
    assert "check_hicache_events" in first["reasons"]["shared_frames"]
    assert document["index"]["example"] is True
    assert "example index" in result.stderr
    assert (cache_home / "reporter" / issues.EXAMPLE_DB_NAME).is_file()
    # The second run reuses the example index: same bytes out.
    again = runner.invoke(
        cli, ["search-upstream", str(TP_DESYNC), "--offline", "--json", "--limit", "4"]
    )
    assert again.stdout == result.stdout


def test_cli_table_output(cache_home: Path) -> None:
    result = runner.invoke(cli, ["search-upstream", str(TP_DESYNC), "--offline", "--limit", "3"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(" 1. ") and "likely-duplicate" in lines[0]
    assert "sgl-project/sglang#" in lines[0]
    assert any("stack " in line and "shares" in line for line in lines)


def test_cli_without_an_index_says_what_to_do(cache_home: Path) -> None:
    result = runner.invoke(cli, ["search-upstream", str(TP_DESYNC)])
    assert result.exit_code == 2
    assert "no issue index yet" in result.stderr
    assert "--offline" in result.stderr


def test_cli_text_file_and_repo_options(cache_home: Path, tmp_path: Path) -> None:
    db = tmp_path / "mine.sqlite3"
    imported = runner.invoke(cli, ["index", "import", str(EXAMPLE_ISSUES), "--db", str(db)])
    assert imported.exit_code == 0, imported.output
    draft = tmp_path / "draft.md"
    draft.write_text(
        "vLLM workers hang in shm_broadcast dequeue\n\nMessageQueue.dequeue never returns with TP=2"
    )
    result = runner.invoke(
        cli,
        [
            "search-upstream",
            "--text-file",
            str(draft),
            "--repo",
            "vllm-project/vllm",
            "--db",
            str(db),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["candidates"][0]["number"] == 15201
    assert {c["repo"] for c in document["candidates"]} == {"vllm-project/vllm"}


def test_cli_text_from_stdin(cache_home: Path) -> None:
    dump = (TP_DESYNC / "snapshots" / "rank0_s0.txt").read_text()
    result = runner.invoke(
        cli,
        [
            "search-upstream",
            "--text-file",
            "-",
            "--offline",
            "--repo",
            "sgl-project/sglang",
            "--json",
        ],
        input="Scheduler stuck\n\n" + dump,
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["query"]["stacks"][0]["frames"][:3] == [
        "all_reduce",
        "writing_check",
        "check_hicache_events",
    ]
    assert document["candidates"][0]["number"] in DUPLICATES


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["search-upstream", "--offline"], 2, "nothing to search for"),
        (["search-upstream", str(TP_DESYNC), "--offline", "--repo", "not-a-repo"], 2, "owner/name"),
        (["search-upstream", str(TP_DESYNC), "--offline", "--limit", "0"], 2, "--limit"),
        (
            ["search-upstream", str(TP_DESYNC), "--db", "/nonexistent/x.sqlite3"],
            2,
            "no such issue index",
        ),
        (["index", "export", "--db", "/nonexistent/x.sqlite3"], 2, "no such issue index"),
        (["sync"], 2, "no repository to sync"),  # none given, none in the config
    ],
)
def test_cli_usage_errors(cache_home: Path, args: list[str], code: int, needle: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == code
    assert needle in result.output + result.stderr


def test_cli_import_reports_bad_lines_and_export_round_trips(
    cache_home: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    good = {"repo": "a/b", "number": 1, "title": "t", "body": "b", "state": "open", "labels": ["x"]}
    source.write_text(json.dumps(good) + "\n{oops\n" + json.dumps({**good, "number": 2}) + "\n")
    db = tmp_path / "x.sqlite3"
    result = runner.invoke(cli, ["index", "import", str(source), "--db", str(db)])
    assert result.exit_code == 0
    assert f"skipped {source}:2: not JSON" in result.stderr
    assert "imported 2 issues" in result.stdout
    exported = runner.invoke(cli, ["index", "export", "--db", str(db), "--repo", "a/b"])
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["number"] for r in rows] == [1, 2]
    assert rows[0]["labels"] == ["x"] and rows[0]["url"] == "https://github.com/a/b/issues/1"


def test_cli_sync_against_the_local_server(
    cache_home: Path, tmp_path: Path, ghserver: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(1, 131):
        ghserver.add_issue(
            "a/b", number, updated_at=f"2025-02-01T00:{number // 60:02d}:{number % 60:02d}Z"
        )
    monkeypatch.setenv("GITHUB_API_URL", ghserver.url)
    db = tmp_path / "s.sqlite3"
    first = runner.invoke(cli, ["sync", "a/b", "--db", str(db)])
    assert first.exit_code == 0, first.output
    assert "a/b: 130 issues stored from 2 pages; 2 requests" in first.stdout
    assert first.stderr.count("no GitHub token") == 1
    runner.invoke(cli, ["sync", "a/b", "--db", str(db)])
    third = runner.invoke(cli, ["sync", "a/b", "--db", str(db)])
    assert "a/b: no changes (304); 1 request" in third.stdout
    with Index(db) as index:
        assert index.count(["a/b"]) == 130


def test_example_jsonl_matches_its_generator() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "write_issues", ROOT / "fixtures" / "github" / "write_issues.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert EXAMPLE_ISSUES.read_text(encoding="utf-8") == module.render()
    rows = [json.loads(line) for line in EXAMPLE_ISSUES.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 40
    assert {r["number"] for r in rows} >= DUPLICATES


def test_the_example_issues_ship_as_package_data() -> None:
    """`search-upstream --offline` works outside a checkout: the copy in the package is current."""
    shipped = ROOT / "reporter" / "data" / "example-issues.jsonl"
    assert shipped.read_bytes() == EXAMPLE_ISSUES.read_bytes()
    assert issues.example_jsonl() == shipped


HEALTHY = ROOT / "fixtures" / "bundles" / "healthy_loop"


def test_a_healthy_bundle_gets_no_related_issues_and_says_why(example_index: Index) -> None:
    """Issue 24: a bundle whose ranks progress ("No hang") got "related" issues."""
    bundle = load([HEALTHY])
    analysis = analyze(bundle)
    assert analysis.verdict.value == "progressing"
    query = query_from_analysis(bundle, analysis)
    assert not query.incident and query.signals.classes == ()
    # Without the rule the same query finds related issues: the rule is what drops them.
    # (An incident's verdict, so that the bundle cut-off applies to both.)
    loose = search.find_duplicates(
        example_index, replace(query, verdict="collective-desync"), limit=10
    )
    assert loose
    notes: list[str] = []
    found = search.find_duplicates(example_index, query, limit=10, notes=notes)
    assert found == []
    assert len(notes) == 1
    assert "found no hang (verdict `progressing`)" in notes[0]
    assert f"{len(loose)} weaker match(es) left out" in notes[0]


def test_a_non_incident_keeps_a_strong_text_match(example_index: Index) -> None:
    record = next(example_index.records("sgl-project/sglang"))
    query = replace(
        query_from_text(f"{record.title}\n{record.body}", title=record.title),
        repos=(record.repo,),
        verdict="inconclusive",
    )
    notes: list[str] = []
    found = search.find_duplicates(example_index, query, limit=10, notes=notes)
    assert [c.issue.record.number for c in found] == [record.number]
    assert "no clear incident (verdict `inconclusive`)" in notes[0]
    assert notes[0].startswith("1 related issue(s) shown")


def test_cli_search_for_a_healthy_bundle_says_why_it_lists_only_weak(cache_home: Path) -> None:
    result = runner.invoke(cli, ["search-upstream", str(HEALTHY), "--offline", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    # Nothing related (no hang): the best three, each marked weak, never an empty answer.
    assert [c["level"] for c in document["candidates"]] == ["weak"] * 3
    assert all(c["reasons"] for c in document["candidates"])
    assert any("found no hang" in n for n in document["notes"])
    assert any("shown as weak matches" in n for n in document["notes"])


def _weak_index(tmp_path: Path) -> Index:
    index = Index(tmp_path / "weak.sqlite3")
    index.upsert(
        [
            IssueRecord(
                repo="sgl-project/sglang",
                number=n,
                title=title,
                body=body,
            )
            for n, title, body in (
                (10, "Scheduler stuck before all_reduce with HiCache", "writing check waits"),
                (11, "Tokenizer crash on emoji", "unicode error in detokenizer"),
                (12, "LoRA load fails", "adapter missing"),
                (13, "Docs typo", "see #10 for the all_reduce hang"),
                (3836, "Model stuck at prefill, watchdog timeout", "see #10"),
            )
        ]
    )
    return index


def test_nothing_related_still_shows_the_best_three_as_weak(tmp_path: Path) -> None:
    with _weak_index(tmp_path) as index:
        # A bundle whose analysis found no clear incident: only strong text matches are
        # related, and here none is.
        query = replace(
            query_from_text("HiCache writing stalls", repos=("sgl-project/sglang",)),
            verdict="inconclusive",
        )
        strict = search.find_duplicates(index, query, limit=10, embedder=None)
        notes: list[str] = []
        shown = search.find_duplicates(
            index, query, limit=10, embedder=None, weak_fallback=True, notes=notes
        )
    assert strict == []
    assert 1 <= len(shown) <= 3
    assert {c.level for c in shown} == {Level.WEAK}
    assert shown[0].issue.record.number == 10
    assert all(c.reasons.notes for c in shown)
    assert "cut-off (0.015 for bundle queries)" in notes[-1]


def _found(tmp_path: Path, text: str) -> list[Candidate]:
    """Every candidate for `text` searched in sgl-project/sglang, without the semantic model."""
    with _weak_index(tmp_path) as index:
        query = query_from_text(text, repos=("sgl-project/sglang",))
        return search.find_duplicates(index, query, limit=10, embedder=None, include_weak=True)


def test_a_referenced_issue_ranks_first_and_says_why(tmp_path: Path) -> None:
    found = _found(
        tmp_path, "[BUG] The #3836 problem still exists\n\nIt came back after the upgrade."
    )
    numbers = [c.issue.record.number for c in found]
    assert numbers[0] == 3836
    first = found[0]
    assert first.level is not Level.WEAK  # named, though it shares no word with the query
    assert first.reasons.scores.reference == 1.0
    assert "the query names it (sgl-project/sglang#3836)" in first.reasons.notes
    # What #3836 links to (#10) is evidence too, at one remove.
    linked = next(c for c in found if c.issue.record.number == 10)
    assert linked.reasons.scores.reference == 0.5
    assert any("#3836, which the query names, links to it" in n for n in linked.reasons.notes)
    assert numbers[1] == 10


def test_a_reference_to_another_repository_is_no_evidence(tmp_path: Path) -> None:
    found = _found(
        tmp_path, "like vllm-project/vllm#3836 and https://github.com/vllm-project/vllm/issues/12"
    )
    assert all(c.reasons.scores.reference == 0.0 for c in found)


def test_a_draft_cites_no_weak_match(tmp_path: Path) -> None:
    """The command line shows weak matches when nothing is related; a draft never cites them."""
    from reporter.app import filing

    db = tmp_path / "index.sqlite3"
    with Index(db) as index:
        index.import_jsonl(EXAMPLE_ISSUES.read_text("utf-8").splitlines(), source="issues.jsonl")
    bundle = load([HEALTHY])
    analysis = analyze(bundle)
    access = issues.GitHubAccess(env={}, cache_dir=tmp_path)
    query = query_from_analysis(bundle, analysis, repos=("sgl-project/sglang",))
    shown = issues.run_search(query, db=db, online=False, limit=10, access=access)
    assert shown.candidates and {c.level for c in shown.candidates} == {Level.WEAK}
    notes: list[str] = []
    cited, searched = filing.related_issues(
        bundle, analysis, "sgl-project/sglang", db=db, online=False, access=access, notes=notes
    )
    assert searched and cited == ()
