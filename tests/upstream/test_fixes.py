""" "Fixed in vX": closing changes from timelines, release bisection, version verdicts,
and the whole path over the local GitHub-like server (sync -> index -> search output)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reporter.cli import cli
from reporter.upstream import fixes, sync
from reporter.upstream.github import GitHubClient, Token
from reporter.upstream.index import Index

from .conftest import TP_DESYNC, FakeClock
from .ghserver import GitHubServer

REPO = "sgl-project/sglang"
runner = CliRunner()


def _closed(commit: str | None, at: str = "2025-01-03T00:00:00Z") -> dict[str, Any]:
    return {"event": "closed", "created_at": at, "commit_id": commit}


def _xref(number: int, merged_at: str | None, repo: str = REPO) -> dict[str, Any]:
    return {
        "event": "cross-referenced",
        "created_at": "2025-01-01T00:00:00Z",
        "source": {
            "type": "issue",
            "issue": {
                "number": number,
                "html_url": f"https://github.com/{repo}/pull/{number}",
                "repository_url": f"https://api.github.com/repos/{repo}",
                "pull_request": {"merged_at": merged_at},
            },
        },
    }


def test_a_closing_commit_is_named_after_its_merged_pull_request() -> None:
    change = fixes.closing_change(
        [_xref(77, "2025-01-02T00:00:00Z"), _closed("abc123def4567")], REPO
    )
    assert (change.kind, change.ref, change.sha, change.pull) == (
        "pull",
        "#77",
        "abc123def4567",
        77,
    )


def test_a_closing_commit_without_a_pull_request_is_a_commit() -> None:
    change = fixes.closing_change([_closed("abc123def4567890")], REPO)
    assert (change.kind, change.ref) == ("commit", "abc123def456")
    assert change.url == f"https://github.com/{REPO}/commit/abc123def4567890"


def test_a_linked_pull_request_counts_only_when_merged_in_the_same_repo_before_closing() -> None:
    events = [
        _xref(5, None),  # open, never merged
        _xref(6, "2025-02-01T00:00:00Z"),  # merged after the issue closed
        _xref(7, "2025-01-02T00:00:00Z", repo="someone/fork"),  # another repository
        _xref(8, "2025-01-01T00:00:00Z"),
        _closed(None),
    ]
    change = fixes.closing_change(events, REPO)
    assert (change.kind, change.pull, change.sha) == ("pull", 8, None)
    assert fixes.closing_change([_xref(5, None), _closed(None)], REPO) is fixes.NO_CHANGE


def test_first_release_bisects_in_version_order_not_name_order() -> None:
    tags = ["v0.9.0", "v0.10.0", "v0.10.1", "v0.11.0rc1", "nightly", "v0.2.0", "v0.11.0"]
    released = {"v0.10.1", "v0.11.0", "v0.11.0rc1"}
    asked: list[str] = []

    def contains(tag: str) -> bool:
        asked.append(tag)
        return tag in released

    assert fixes.first_release(tags, contains) == "v0.10.1"
    assert "nightly" not in asked and "v0.11.0rc1" not in asked
    assert len(asked) <= 4
    assert fixes.first_release(tags, lambda tag: False) is None
    assert fixes.first_release(["nightly", "latest"], lambda tag: True) is None


@pytest.mark.parametrize(
    ("tag", "deployed", "expected"),
    [
        ("v0.5.3", "0.5.2", False),
        ("v0.5.3", "0.5.3", True),
        ("v0.5.3", "0.5.10", True),
        ("v0.5.3", "0.5.3rc1", False),
        ("v0.5.3", "0.5.3.post1", True),
        ("v0.5.3", "main", None),
    ],
)
def test_has_fix_orders_versions_as_packaging_does(
    tag: str, deployed: str, expected: bool | None
) -> None:
    assert fixes.has_fix(tag, deployed) is expected


def test_fixed_note_says_what_the_deployment_lacks() -> None:
    change = fixes.Change(kind="pull", ref="#4410", sha="abc")
    assert (
        fixes.fixed_note(4388, REPO, change, "v0.5.3", "0.5.2")
        == f"matches {REPO}#4388, fixed in v0.5.3 (#4410); this deployment runs 0.5.2, "
        "without the fix: upgrading should help"
    )
    assert "which has the fix" in (fixes.fixed_note(4388, REPO, change, "v0.5.3", "0.5.4") or "")
    assert "in no release yet" in (fixes.fixed_note(4388, REPO, change, None, "0.5.2") or "")
    assert fixes.fixed_note(4388, REPO, fixes.NO_CHANGE, "v0.5.3", "0.5.2") is None


def test_deployed_version_reads_packages_then_the_manifest() -> None:
    assert fixes.deployed_version(REPO, {"sglang": "0.5.2"}) == "0.5.2"
    assert fixes.deployed_version("pytorch/pytorch", {"torch": "2.5.1"}) == "2.5.1"
    assert fixes.deployed_version(REPO, {}, "sglang 0.4.9") == "0.4.9"
    assert fixes.deployed_version(REPO, {}, "torch 2.13.0+cpu", "sglang (simulated)") == ""
    assert fixes.deployed_version(REPO, {}, "v0.5.0", "sglang router") == "0.5.0"


# --- end to end on the local server ----------------------------------------------------

HISTORY = [f"{n:02d}" + "a" * 38 for n in range(1, 11)]


def _tracker(server: GitHubServer) -> None:
    """A tracker whose #4388 was fixed by PR #4410 (merge commit 05...), released in
    v0.5.3; #4101 closed by hand with nothing linked; #4620 open."""
    server.add_issue(
        REPO,
        4388,
        title="Requests stuck forever with --enable-hierarchical-cache, GPUs at 0% util",
        body="Scheduler hangs in all_reduce under check_hicache_events; ranks 2-3 idle.",
        updated_at="2025-01-03T00:00:00Z",
    )
    server.add_issue(
        REPO,
        4101,
        title="TP ranks hang in check_hicache_events all_reduce when idle",
        body="all_reduce in check_hicache_events from on_idle never returns",
        updated_at="2025-01-03T00:00:00Z",
    )
    server.add_issue(REPO, 4620, title="Docs: typo in README", body="A typo.")
    server.add_commits(REPO, HISTORY)
    for name, at in (("v0.5.1", 2), ("v0.5.2", 4), ("v0.5.3", 6), ("v0.5.10", 9)):
        server.add_tag(REPO, name, HISTORY[at])
    server.fix_issue(REPO, 4388, sha=HISTORY[5], pull=4410, closing_commit=False)
    server.close_issue(REPO, 4101)


def test_sync_stores_the_fix_and_its_first_release(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    _tracker(ghserver)
    with (
        Index(tmp_path / "i.sqlite3") as index,
        GitHubClient(
            base_url=ghserver.url, token=Token(value="t", source="test"), clock=clock
        ) as client,
    ):
        report = sync.sync_repo(index, client, REPO, fixed_in=True)
        assert report.fixes is not None
        assert (report.fixes.checked, report.fixes.found, report.fixes.left) == (2, 1, 0)
        fix = index.fix(REPO, 4388)
        assert fix is not None
        # The linked PR had no closing commit: its merge commit came from the pulls API.
        assert (fix.kind, fix.ref, fix.sha, fix.tag) == ("pull", "#4410", HISTORY[5], "v0.5.3")
        by_hand = index.fix(REPO, 4101)
        assert by_hand is not None and by_hand.kind == "none"
        assert index.fix(REPO, 4620) is None
        assert ghserver.count("/pulls/4410") == 1
        compares = ghserver.count("/compare/")
        assert 1 <= compares <= 3
        # Nothing changed: the next sync is one listing and looks nothing up again.
        before = len(ghserver.requests)
        again = sync.sync_repo(index, client, REPO, fixed_in=True)
        # The second sync of an unchanged repository is one conditional request (304):
        # nothing changed, so no fix is looked up again.
        assert again.not_modified and again.requests == 1 and again.fixes is None
        assert len(ghserver.requests) == before + 1


def test_search_upstream_says_fixed_in_and_what_the_deployment_runs(
    ghserver: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tracker(ghserver)
    monkeypatch.setenv("GITHUB_API_URL", ghserver.url)
    monkeypatch.setenv("GITHUB_TOKEN", "t0k")
    db = tmp_path / "i.sqlite3"
    synced = runner.invoke(cli, ["sync", REPO, "--db", str(db)])
    assert synced.exit_code == 0, synced.output
    assert "fixes of 2 closed issues looked up (1 found)" in synced.stdout
    bundle = tmp_path / "bundle"
    shutil.copytree(TP_DESYNC, bundle)
    manifest = bundle / "bundle.toml"
    manifest.write_text(
        manifest.read_text("utf-8").replace(
            'version = "torch 2.13.0+cpu"', 'version = "sglang 0.5.2"'
        ),
        "utf-8",
    )
    result = runner.invoke(cli, ["search-upstream", str(bundle), "--db", str(db), "--offline"])
    assert result.exit_code == 0, result.output
    assert (
        f"matches {REPO}#4388, fixed in v0.5.3 (#4410); this deployment runs 0.5.2, "
        "without the fix: upgrading should help." in result.stdout
    )
    as_json = runner.invoke(
        cli, ["search-upstream", str(bundle), "--db", str(db), "--offline", "--json"]
    )
    document = json.loads(as_json.stdout)
    first = next(c for c in document["candidates"] if c["number"] == 4388)
    assert first["fixed_in"] == {
        "change": "#4410",
        "kind": "pull",
        "url": f"https://github.com/{REPO}/pull/4410",
        "commit": HISTORY[5],
        "release": "v0.5.3",
        "deployment": "0.5.2",
        "deployment_has_fix": False,
    }
    assert document["query"]["deployed"] == {REPO: "0.5.2"}
    assert all(c["fixed_in"] is None for c in document["candidates"] if c["number"] != 4388)
