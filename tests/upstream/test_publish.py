"""`report upstream file` against the GitHub-like server on 127.0.0.1 (the client's real traffic).

File a new issue; comment on the canonical issue of a duplicate chain; skip an identical
comment; a timeout after the POST files once; rate limits wait or stop; TODOs and leaks
refuse; forms come through the contents API and are cached.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reporter.app import filing
from reporter.app.filing import DraftSource
from reporter.app.issues import GitHubAccess
from reporter.app.report import Options, load_and_analyze
from reporter.console.upstream import upstream_file_text
from reporter.core.errors import RateLimitError
from reporter.upstream.draft import find_marker
from reporter.upstream.publish import Action, FileResult, FilingPolicy

from .conftest import EXAMPLE_ISSUES, ROOT, TP_DESYNC, FakeClock
from .ghserver import Fault, GitHubServer

SGLANG = "sgl-project/sglang"
EMPTY = "acme/inference"
FORMS = ROOT / "fixtures" / "forms" / "sglang" / ".github" / "ISSUE_TEMPLATE"
# vLLM's real form has a required checkbox: a draft from it has a TODO until it is ticked.
VLLM_FORMS = ROOT / "fixtures" / "forms" / "vllm" / ".github" / "ISSUE_TEMPLATE"

Filer = Callable[..., FileResult]


@pytest.fixture
def filer(
    ghserver: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> Filer:
    """`file(repo, **options)`: file the tp_desync bundle (a copy) through the local server."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for line in EXAMPLE_ISSUES.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["repo"] == SGLANG:
            ghserver.add_issue(
                SGLANG, item["number"], title=item["title"], body=item["body"], state=item["state"]
            )
    ghserver.issues[EMPTY] = []
    ghserver.stall = 1.5
    shutil.copytree(TP_DESYNC, tmp_path / "bundle")
    # The deployed sglang version, which a draft for sgl-project/sglang must state.
    manifest = tmp_path / "bundle" / "bundle.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace(
            'version = "torch 2.13.0+cpu"', 'version = "torch 2.13.0+cpu, sglang 0.5.2"'
        ),
        encoding="utf-8",
    )
    env = {
        "GH_ENTERPRISE_TOKEN": "test-token",
        "GITHUB_API_URL": ghserver.url,
        "HOME": str(tmp_path),
    }

    def file(repo: str, **options: Any) -> FileResult:
        bundle, analysis = load_and_analyze([tmp_path / "bundle"], Options())
        return filing.file_upstream(
            DraftSource(bundle=bundle, analysis=analysis, repo=repo, db=tmp_path / "index.sqlite3"),
            access=GitHubAccess(env=options.pop("env", env), clock=clock),
            pace=False,
            timeout=1,
            reports=tmp_path / "reports",
            **options,
        )

    return file


def _created(server: GitHubServer, repo: str) -> list[dict[str, Any]]:
    return [i for i in server.issues.get(repo, []) if find_marker(i["body"])]


def test_dry_run_then_file_a_new_issue_once(
    filer: Filer, ghserver: GitHubServer, tmp_path: Path
) -> None:
    dry = filer(EMPTY)
    assert dry.plan.action is Action.NEW_ISSUE and not dry.sent
    assert dry.plan.refusals == ()
    assert ghserver.posts() == [], "a dry run sends nothing"
    request = dry.plan.request
    assert request is not None and request.url == f"{ghserver.url}/repos/{EMPTY}/issues"
    printed = upstream_file_text(dry)
    assert request.body.rstrip("\n") in printed and "pass --yes" in printed

    sent = filer(EMPTY, yes=True)
    assert sent.sent and sent.plan.action is Action.NEW_ISSUE
    (post,) = ghserver.posts("/issues")
    assert post.headers["authorization"] == "Bearer test-token"
    assert json.loads(post.body) == request.payload(), "exactly what the dry run printed"
    (issue,) = _created(ghserver, EMPTY)
    assert sent.url == issue["html_url"]
    # The record lives beside the reports, never in the evidence folder.
    assert sent.recorded == tmp_path / "reports" / "upstream-filed.toml"
    assert not (tmp_path / "bundle" / "upstream.toml").exists()
    assert issue["html_url"] in sent.recorded.read_text(encoding="utf-8")

    again = filer(EMPTY, yes=True)
    assert again.plan.action is Action.ALREADY_FILED and again.url == issue["html_url"]
    sent.recorded.unlink()
    marker_check = filer(EMPTY, yes=True)
    assert marker_check.plan.action is Action.ALREADY_FILED
    assert "marker" in marker_check.plan.reasons[0]
    assert len(ghserver.posts()) == 1 and len(_created(ghserver, EMPTY)) == 1


def test_comment_on_the_canonical_issue_of_a_duplicate_chain(
    filer: Filer, ghserver: GitHubServer
) -> None:
    ghserver.close_issue(SGLANG, 4512, "duplicate")
    ghserver.add_comment(SGLANG, 4512, "Duplicate of #4388")
    plan = filer(SGLANG).plan
    assert plan.action is Action.COMMENT and plan.target == 4388
    # 4388 is reached through the chain from the closed 4512, or found first itself (the
    # two score within a few hundredths of each other); never a comment on closed 4512.
    assert any("#4512 -> #4388" in r or r == "likely duplicate: #4388" for r in plan.reasons), (
        plan.reasons
    )
    result = filer(SGLANG, yes=True)
    assert result.sent
    (post,) = ghserver.posts()
    assert post.path == f"/repos/{SGLANG}/issues/4388/comments"
    (comment,) = ghserver.comments[(SGLANG, 4388)]
    assert "Seen again" in comment["body"] and find_marker(comment["body"]) is not None
    assert _created(ghserver, SGLANG) == [], "no new issue"


def test_skip_a_comment_identical_to_one_already_there(
    filer: Filer, ghserver: GitHubServer, tmp_path: Path
) -> None:
    first = filer(SGLANG, yes=True)
    assert first.plan.action is Action.COMMENT and first.sent
    target = first.plan.target
    assert target is not None
    (tmp_path / "reports" / "upstream-filed.toml").unlink()  # only GitHub can tell now
    second = filer(SGLANG, yes=True)
    assert second.plan.action is Action.SKIP_COMMENT and not second.sent
    assert second.url == ghserver.comments[(SGLANG, target)][0]["html_url"]
    assert len(ghserver.posts()) == 1


def test_a_closed_canonical_issue_gets_a_new_issue_that_cites_it(
    filer: Filer, ghserver: GitHubServer
) -> None:
    for number in (4512, 4388, 4101):
        ghserver.close_issue(SGLANG, number, "completed")
    plan = filer(SGLANG).plan
    assert plan.action is Action.NEW_ISSUE
    assert any("closed as completed" in reason for reason in plan.reasons)
    assert plan.request is not None and "sgl-project/sglang#4512" in plan.request.body


def test_force_new_files_despite_a_likely_duplicate(filer: Filer, ghserver: GitHubServer) -> None:
    assert filer(SGLANG).plan.action is Action.COMMENT
    forced = filer(SGLANG, yes=True, force_new=True)
    assert forced.sent and forced.plan.action is Action.NEW_ISSUE
    assert len(_created(ghserver, SGLANG)) == 1


def test_timeout_after_the_post_files_one_issue(
    filer: Filer, ghserver: GitHubServer, clock: FakeClock
) -> None:
    ghserver.inject(Fault("timeout", match=f"/repos/{EMPTY}/issues", method="POST"))
    result = filer(EMPTY, yes=True)
    assert result.sent
    (issue,) = _created(ghserver, EMPTY)
    assert result.url == issue["html_url"]
    assert len(ghserver.posts()) == 1, "the marker was found: no second POST"


def test_timeout_after_a_comment_post_comments_once(filer: Filer, ghserver: GitHubServer) -> None:
    ghserver.inject(Fault("timeout", match="/comments", method="POST"))
    result = filer(SGLANG, yes=True)
    assert result.sent and result.plan.action is Action.COMMENT
    assert result.plan.target is not None
    assert len(ghserver.comments[(SGLANG, result.plan.target)]) == 1
    assert len(ghserver.posts()) == 1


@pytest.mark.parametrize(("kind", "wait"), [("rate-limit", 31.0), ("secondary", 7.0), ("429", 7.0)])
def test_rate_limit_during_filing_waits_then_files(
    filer: Filer, ghserver: GitHubServer, clock: FakeClock, kind: str, wait: float
) -> None:
    ghserver.inject(
        Fault(kind, match=f"/repos/{EMPTY}/issues", method="POST", reset_in=30, retry_after=7)
    )
    result = filer(EMPTY, yes=True)
    assert result.sent
    assert len(ghserver.posts()) == 2 and len(_created(ghserver, EMPTY)) == 1
    assert any(abs(seconds - wait) <= 1.5 for seconds in clock.sleeps), clock.sleeps


def test_a_rate_limit_longer_than_the_wait_stops_with_when(
    filer: Filer, ghserver: GitHubServer
) -> None:
    ghserver.inject(
        Fault("rate-limit", match=f"/repos/{EMPTY}/issues", method="POST", reset_in=3600)
    )
    with pytest.raises(RateLimitError, match=r"resets at .* nothing was sent"):
        filer(EMPTY, yes=True, policy=FilingPolicy(max_wait=60))
    assert _created(ghserver, EMPTY) == []


def test_todos_and_leaks_refuse_then_a_reviewed_draft_files(
    filer: Filer, ghserver: GitHubServer, tmp_path: Path
) -> None:
    ghserver.add_files(
        EMPTY, {f".github/ISSUE_TEMPLATE/{p.name}": p.read_text() for p in VLLM_FORMS.iterdir()}
    )
    refused = filer(EMPTY, yes=True)
    assert not refused.sent and refused.plan.refusals
    assert "TODO(reviewer)" in refused.plan.refusals[0]
    assert ghserver.posts() == []

    bundle, analysis = load_and_analyze([tmp_path / "bundle"], Options())
    run = filing.make_draft(
        DraftSource(bundle=bundle, analysis=analysis, repo=EMPTY, forms_dir=VLLM_FORMS),
        offline=True,
        access=GitHubAccess(env={}),
    )
    reviewed = "\n".join(
        line.replace("- [ ]", "- [X]")
        for line in run.draft.document.splitlines()
        if "TODO(reviewer)" not in line
    )
    draft = tmp_path / "reviewed.md"
    draft.write_text(
        reviewed + "\nSeen with ghp_" + "a1B2" * 9 + " in the logs.\n", encoding="utf-8"
    )
    leaky = filer(EMPTY, yes=True, draft_file=draft)
    assert not leaky.sent and any("redaction scan" in r for r in leaky.plan.refusals)

    draft.write_text(reviewed + "\n", encoding="utf-8")
    result = filer(EMPTY, yes=True, draft_file=draft)
    assert result.sent, result.plan.refusals
    (post,) = ghserver.posts()
    payload = json.loads(post.body)
    assert payload["title"].startswith("[Bug]: ") and payload["labels"] == ["bug"]
    assert payload["body"].startswith("### Your current environment\n")
    assert "- [X] Make sure you already searched" in payload["body"]
    front = draft.read_text(encoding="utf-8")
    assert "status: filed" in front and f'upstream_issue: "{result.url}"' in front


def test_no_token_is_a_refusal_not_a_crash(filer: Filer, ghserver: GitHubServer) -> None:
    result = filer(EMPTY, yes=True, env={"GITHUB_API_URL": ghserver.url, "HOME": "/nonexistent"})
    assert not result.sent and any("no GitHub token" in r for r in result.plan.refusals)
    assert ghserver.posts() == []


def test_forms_come_through_the_contents_api_and_are_cached(
    ghserver: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ghserver.add_files(
        SGLANG, {f".github/ISSUE_TEMPLATE/{p.name}": p.read_text() for p in FORMS.iterdir()}
    )
    env = {"GITHUB_API_URL": ghserver.url}
    notes: list[str] = []
    form = filing.choose_form(
        SGLANG,
        forms_dir=None,
        offline=False,
        access=GitHubAccess(env=env, clock=clock),
        notes=notes,
    )
    assert form.source == "1-bug-report.yml" and notes == []
    fetched = ghserver.count("/contents/")
    assert fetched == 4  # the listing and three files
    again = filing.choose_form(
        SGLANG,
        forms_dir=None,
        offline=False,
        access=GitHubAccess(env=env, clock=clock),
        notes=notes,
    )
    assert again == form and ghserver.count("/contents/") == fetched, "fresh cache: no request"
    clock.time += filing.FORMS_TTL + 1
    filing.choose_form(
        SGLANG,
        forms_dir=None,
        offline=False,
        access=GitHubAccess(env=env, clock=clock),
        notes=notes,
    )
    assert ghserver.count("/contents/", status=304) == 1, "stale cache: one conditional request"
    offline = filing.choose_form(
        SGLANG, forms_dir=None, offline=True, access=GitHubAccess(env=env), notes=notes
    )
    assert offline == form
    # Caches are kept per host: github.com's sgl-project/sglang is another repository,
    # whose real form ships with reporter (the same as the fixture served here).
    other_notes: list[str] = []
    other = filing.choose_form(
        SGLANG, forms_dir=None, offline=True, access=GitHubAccess(env={}), notes=other_notes
    )
    assert other == form
    assert any("shipped with reporter (commit f1ad3ee37b70)" in n for n in other_notes)
    acme: list[str] = []
    filing.choose_form(
        "acme/inference", forms_dir=None, offline=True, access=GitHubAccess(env={}), notes=acme
    )
    assert any("using the generic form" in n for n in acme)


def test_a_signature_match_alone_never_picks_a_thread_without_stacks(
    ghserver: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    # A metrics-only bundle: inconclusive, no stacks. An open issue carries the same
    # signature from another bundle; that alone must not make it the comment target.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shutil.copytree(ROOT / "fixtures" / "bundles" / "wedge_metrics", tmp_path / "bundle")
    bundle, analysis = load_and_analyze([tmp_path / "bundle"], Options())
    assert not analysis.classes
    ghserver.issues[EMPTY] = []
    body = f"Same hang?\n\n<!-- reporter-upstream signature={analysis.signature.hash} bundle=0123456789ab -->"
    ghserver.add_issue(EMPTY, 7, title="hang", body=body, state="open")
    env = {"GITHUB_TOKEN": "test-token", "GITHUB_API_URL": ghserver.url, "HOME": str(tmp_path)}
    result = filing.file_upstream(
        DraftSource(bundle=bundle, analysis=analysis, repo=EMPTY, db=tmp_path / "index.sqlite3"),
        access=GitHubAccess(env=env, clock=clock),
        pace=False,
        timeout=1,
        reports=tmp_path / "reports",
    )
    assert result.plan.action is Action.NEW_ISSUE
    assert any("signature match alone" in r for r in result.plan.reasons)
    assert ghserver.posts() == []
