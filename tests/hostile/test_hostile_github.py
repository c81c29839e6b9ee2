"""Hostile GitHub answers (issue 21) and failures said as failures (issue 22), one row each.

Every row starts a hostile server on 127.0.0.1 (`github_servers.HostileGitHub`), runs one
`report` command against it in a subprocess with the watchdog of `harness.run_cli`, and
holds it to the rules of `harness.check_rules` (no traceback, one `error:` line with a
`Tip:`, the expected exit code), to "no file outside the row's outputs changed", and to
the row's own check. The server is stopped when the row ends.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .github_servers import HostileGitHub
from .harness import ROOT, Outcome, changed, check_rules, environment, run_cli, snapshot

TP_DESYNC = ROOT / "fixtures" / "bundles" / "tp_desync"
BOUND = 60.0
SIGNATURE = "224f67aed9f0"  # tp_desync's hang signature (`report analyze --json`)


@dataclass(frozen=True)
class Row:
    """One row: the server's mode, then `setup(work, server)` returns the arguments."""

    id: str
    mode: str
    setup: Callable[[Path, HostileGitHub], list[str]]
    expect: set[int]
    says: str = ""
    allowed: tuple[str, ...] = ()
    check: Callable[[Path, Outcome], None] | None = None
    bound: float = BOUND


def bundle(work: Path) -> Path:
    target = work / "b"
    shutil.copytree(TP_DESYNC, target)
    return target


def token_for(work: Path, server: HostileGitHub) -> None:
    """A token for the server's host in gh's hosts.yml (the harness clears GH_* variables)."""
    host = server.url.removeprefix("http://")
    path = work / ".config" / "gh" / "hosts.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'"{host}":\n  oauth_token: test-token\n', encoding="utf-8")


def text_file(work: Path) -> Path:
    path = work / "q.txt"
    path.write_text("hang in all_reduce from check_hicache_events\n", encoding="utf-8")
    return path


def online_search(work: Path, server: HostileGitHub) -> list[str]:
    return [
        "search-upstream",
        "--online",
        "--repo",
        "a/b",
        "--text-file",
        str(text_file(work)),
        "--base-url",
        server.url,
    ]


def no_index_left(work: Path, _outcome: Outcome) -> None:
    """A failed online command leaves no index behind (it would hide the example index)."""
    cache = work / ".cache" / "reporter"
    left = sorted(p.name for p in cache.glob("upstream-issues*")) if cache.exists() else []
    assert left == [], left


def one_line_said_once(_work: Path, outcome: Outcome) -> None:
    (error,) = [line for line in outcome.stderr.splitlines() if line.startswith("error:")]
    assert error.count("POST a/b issue") == 1, error


def stored_numbers(work: Path, _outcome: Outcome) -> None:
    with sqlite3.connect(work / "i.sqlite3") as db:
        numbers = sorted(row[0] for row in db.execute("SELECT number FROM issues"))
    assert numbers == [1, 3]


def no_escapes_in_draft(work: Path, outcome: Outcome) -> None:
    text = (work / "d.md").read_text(encoding="utf-8")
    assert "a/b#7" in text, "the hostile issue must be cited for the row to mean anything"
    for bad in ("\x1b", "\x07", "\u202e", "\u200b"):
        assert bad not in text, repr(bad)
    assert "check\\_hicache\\_events" in text or "check_hicache_events" in text
    assert "\x1b" not in outcome.stdout + outcome.stderr


# --- setups -------------------------------------------------------------------------


def s_sync_bad_number(work: Path, server: HostileGitHub) -> list[str]:
    return [
        "sync",
        "a/b",
        "--no-fixed-in",
        "--db",
        str(work / "i.sqlite3"),
        "--base-url",
        server.url,
    ]


def s_online(work: Path, server: HostileGitHub) -> list[str]:
    return online_search(work, server)


def s_sync(work: Path, server: HostileGitHub) -> list[str]:
    return ["sync", "a/b", "--no-fixed-in", "--base-url", server.url]


def s_escape_titles(work: Path, server: HostileGitHub) -> list[str]:
    target = bundle(work)
    # The hostile issue holds tp_desync's own stack, so the duplicate search cites it.
    server.stack_body = "```\n" + (TP_DESYNC / "snapshots" / "rank0_s0.txt").read_text() + "\n```"
    db = work / "i.sqlite3"
    setup = subprocess.run(
        [sys.executable, "-m", "reporter", *s_sync_bad_number(work, server)],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        check=False,
    )
    assert setup.returncode == 0, setup.stderr
    return [
        "upstream", "draft", str(target), "--repo", "a/b", "--db", str(db),
        "--base-url", server.url, "-o", str(work / "d.md"),
    ]  # fmt: skip


def s_post_reset(work: Path, server: HostileGitHub) -> list[str]:
    token_for(work, server)
    target = bundle(work)
    return ["upstream", "file", str(target), "--repo", "a/b", "--yes", "--base-url", server.url]


def s_endless_comments(work: Path, server: HostileGitHub) -> list[str]:
    token_for(work, server)
    target = bundle(work)
    # Open, filed by reporter for the same hang from another bundle: filing reads its
    # comments before deciding where the evidence goes.
    server.marker_body = f"<!-- reporter-upstream signature={SIGNATURE} bundle=000000000000 -->"
    return ["upstream", "file", str(target), "--repo", "a/b", "--base-url", server.url]


def s_settings_fifo(command: str) -> Callable[[Path, HostileGitHub], list[str]]:
    def setup(work: Path, _server: HostileGitHub) -> list[str]:
        path = work / ".config" / "reporter" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        target = bundle(work)
        if command == "search":
            return ["search-upstream", str(target), "--offline"]
        return ["upstream", "draft", str(target), "--offline", "-o", str(work / "d.md")]

    return setup


def s_unreachable(work: Path, server: HostileGitHub) -> list[str]:
    # Port 1 on the loopback: refused at once, nothing leaves the machine.
    return [*online_search(work, server)[:-1], "http://127.0.0.1:1"]


def s_import_all_bad(work: Path, _server: HostileGitHub) -> list[str]:
    path = work / "bad.jsonl"
    path.write_text('{"repo": "a/b"}\nnot json\n', encoding="utf-8")
    return ["index", "import", str(path)]


def s_empty_index_then_offline(work: Path, _server: HostileGitHub) -> list[str]:
    cache = work / ".cache" / "reporter"
    cache.mkdir(parents=True)
    # An index that exists and holds nothing (as an interrupted first sync leaves it).
    sqlite3.connect(cache / "upstream-issues.sqlite3").close()
    return ["search-upstream", str(bundle(work)), "--offline"]


def example_answered(_work: Path, outcome: Outcome) -> None:
    assert "example index" in outcome.stdout.splitlines()[-1], outcome.stdout
    assert "sgl-project/sglang#" in outcome.stdout


def s_triage_post(work: Path, server: HostileGitHub) -> list[str]:
    token_for(work, server)
    title = "scheduler hangs in all_reduce from check_hicache_events writing_check"
    line = '{{"repo": "a/b", "number": {n}, "title": "{t}", "body": "{t}", "state": "open"}}\n'
    source = work / "i.jsonl"
    source.write_text(line.format(n=1, t=title) + line.format(n=2, t=title), encoding="utf-8")
    db = work / "t.sqlite3"
    setup = subprocess.run(
        [sys.executable, "-m", "reporter", "index", "import", str(source), "--db", str(db)],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        check=False,
    )
    assert setup.returncode == 0, setup.stderr
    return ["triage", "a/b#1", "--post", "--db", str(db), "--base-url", server.url]


def s_auth_no_token(_work: Path, server: HostileGitHub) -> list[str]:
    return ["auth", "status", "--base-url", server.url]


ROWS = [
    # Issue 21: GitHub answers.
    Row("sync-number-abc", "bad-number", s_sync_bad_number, {0}, "skipped 1 malformed",
        allowed=("i.sqlite3",), check=stored_numbers),
    Row("rate-limit-reset-30-digits", "reset-far", s_online, {1}, "no reset time within a year",
        check=no_index_left),
    Row("body-80-mib", "huge", s_sync, {1}, "larger than 32 MiB", check=no_index_left),
    Row("trickling-server", "trickle", s_online, {1}, "no complete answer within",
        check=no_index_left),
    Row("escape-and-bidi-titles-in-draft", "escape-titles", s_escape_titles, {0},
        allowed=("d.md", "i.sqlite3"), check=no_escapes_in_draft),
    Row("redirect-302", "redirect", s_online, {1}, "redirect", check=no_index_left),
    Row("post-reset-said-once", "reset-posts", s_post_reset, {1}, "gave up after",
        check=one_line_said_once),
    Row("endless-comment-pages", "endless-comments", s_endless_comments, {1},
        "more than 3,000 comments"),
    Row("settings-fifo-search", "ok", s_settings_fifo("search"), {2}, "FIFO"),
    Row("settings-fifo-upstream-draft", "ok", s_settings_fifo("draft"), {2}, "FIFO"),
    # Issue 22: failures are failures.
    Row("online-search-unreachable", "ok", s_unreachable, {1}, "connection failed",
        check=no_index_left),
    Row("online-search-500", "500", s_online, {1}, "answered 500", check=no_index_left),
    Row("online-search-garbage", "garbage", s_online, {1}, "malformed JSON", check=no_index_left),
    Row("online-search-rate-limit", "rate-limit", s_online, {1}, "rate limit",
        check=no_index_left),
    Row("index-import-no-valid-line", "ok", s_import_all_bad, {1}, "no valid issue line",
        check=no_index_left),
    Row("empty-index-never-hides-the-example", "ok", s_empty_index_then_offline, {0},
        check=example_answered),
    Row("auth-status-without-token", "ok", s_auth_no_token, {1}, "token: none"),
    Row("triage-post-garbage", "garbage", s_triage_post, {1}, "could not be read",
        allowed=("t.sqlite3",)),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_hostile_github(row: Row, tmp_path: Path) -> None:
    server = HostileGitHub(row.mode).start()
    try:
        args = row.setup(tmp_path, server)
        before = snapshot(tmp_path)
        outcome = run_cli(args, work=tmp_path, timeout=row.bound)
    finally:
        server.stop()
    if args[:2] == ["auth", "status"]:
        # `auth status` without a token is exit 1 with its report on stdout, not an error.
        assert outcome.code == 1 and "Traceback" not in outcome.stderr, outcome.stderr
    else:
        check_rules(outcome, expect=row.expect, args=args)
    if row.says:
        assert row.says.lower() in (outcome.stdout + outcome.stderr).lower(), outcome.stderr
    moved = [
        rel
        for rel in changed(before, snapshot(tmp_path))
        if not any(rel == a or rel.startswith(a) for a in row.allowed)
    ]
    assert not moved, f"changed outside the outputs: {moved}"
    if row.check is not None:
        row.check(tmp_path, outcome)


def test_every_github_bullet_of_issue_21_has_a_row() -> None:
    ids = {r.id for r in ROWS}
    assert {
        "sync-number-abc",
        "rate-limit-reset-30-digits",
        "body-80-mib",
        "trickling-server",
        "escape-and-bidi-titles-in-draft",
        "redirect-302",
        "post-reset-said-once",
        "endless-comment-pages",
        "settings-fifo-search",
        "settings-fifo-upstream-draft",
    } <= ids
    assert json.dumps(sorted(ids))  # ids are plain strings
