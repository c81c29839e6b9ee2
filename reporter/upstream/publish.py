"""Use cases of `report upstream draft` and `report upstream file`; nothing here prints.

Draft (works with no network and no token)::

    bundle + analysis ──► forms (--forms DIR | cache | contents API | generic)
                      ──► related issues (local index; --offline: the example index)
                      ──► draft.build_draft ──► document for review (front matter + body)

File (a dry run unless `yes`)::

    already recorded in <bundle>/upstream.toml? ─► already filed, stop
    draft (or the reviewed --draft FILE) ─► gate: TODOs, redaction leaks, size
    duplicate search (online) ─► likely duplicate? follow "Duplicate of #N" and
        closed-as-duplicate to the canonical issue; open ─► "+1 with evidence" comment
        (skipped when a comment with the same marker or text is there)
    else ─► recent issues carry our marker? ─► already filed; else create the issue
    send with bounded retries: a rate limit waits (or stops with when it resets); an
        ambiguous failure (timeout after the POST) looks for the marker before retrying
    record the URL in <bundle>/upstream.toml (and the --draft file's front matter)

Network: the httpx client (forms, search) and PyGithub (`filing.Tracker`) share one base
URL (`auth.api_url`: `--base-url`, else `GITHUB_API_URL`, else `GH_HOST`, else
api.github.com), passed down as an argument, and one retry/rate-limit/error policy
(`reporter.upstream.policy`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import platformdirs

from reporter.analysis import Analysis, Verdict
from reporter.errors import ReporterError, UpstreamError, UsageError
from reporter.model import Bundle, EvidenceKind
from reporter.render.lint import GITHUB_BODY_LIMIT, placeholders
from reporter.upstream import draft as drafting
from reporter.upstream import redact
from reporter.upstream.auth import api_url, host_of, missing_token_tip
from reporter.upstream.filing import (
    AmbiguousError,
    PyGithubTracker,
    RateLimitedError,
    RemoteComment,
    RemoteIssue,
    Tracker,
)
from reporter.upstream.forms import IssueForm, generic_form, parse_forms, pick_bug_form
from reporter.upstream.github import GitHubClient, find_token
from reporter.upstream.policy import (
    FILING,
    FILING_DRY_RUN,
    Clock,
    RetryPolicy,
    SystemClock,
    gave_up,
    rate_limit_error,
)
from reporter.upstream.rank import Candidate, Level

FORMS_FOLDER = ".github/ISSUE_TEMPLATE"
FORMS_TTL = 24 * 3600
RECORD_NAME = "upstream.toml"
# Likely duplicates whose canonical issue is looked up before deciding to file.
MAX_CANDIDATES = 3
MAX_DUPLICATE_HOPS = 5
T = TypeVar("T")
_DUPLICATE_RE = re.compile(
    r"(?im)^\s*duplicate\s+of\s+"
    r"(?:https?://[^\s/]+/(?P<url_repo>[\w.-]+/[\w.-]+)/issues/(?P<url_number>\d+)"
    r"|(?P<repo>[\w.-]+/[\w.-]+)?#(?P<number>\d+))"
)


# --- forms ---------------------------------------------------------------------------


def forms_cache_dir(repo: str) -> Path:
    """Where a repository's issue forms are cached (user cache dir)."""
    return platformdirs.user_cache_path("reporter") / "forms" / repo.replace("/", "+")


def read_forms_dir(folder: Path) -> list[tuple[str, str]]:
    """(file name, text) of the `*.yml` forms in `folder` (or its `.github/ISSUE_TEMPLATE`)."""
    inner = folder / FORMS_FOLDER
    if inner.is_dir():
        folder = inner
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder", tip="pass the folder holding the *.yml forms")
    out: list[tuple[str, str]] = []
    for path in sorted(folder.iterdir()):
        if path.suffix in (".yml", ".yaml") and path.is_file():
            try:
                out.append((path.name, path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as err:
                raise UsageError(f"{path}: cannot read it ({err})") from err
    return out


def _read_cache(folder: Path) -> tuple[dict[str, Any], list[tuple[str, str]]] | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        files = [(name, (folder / name).read_text(encoding="utf-8")) for name in meta["files"]]
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return meta, files


def _write_cache(
    folder: Path, files: Sequence[tuple[str, str]], etag: str | None, now: float
) -> None:
    from reporter.writer import write_atomic

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files:
            write_atomic(folder / Path(name).name, text)
        meta = {"fetched_at": now, "etag": etag, "files": [Path(n).name for n, _ in files]}
        write_atomic(folder / "meta.json", json.dumps(meta, indent=2) + "\n")
    except (OSError, ReporterError):
        pass  # a cache that cannot be written only costs a fetch next time


def fetch_forms(
    client: GitHubClient,
    repo: str,
    *,
    cache: Path,
    now: float,
    notes: list[str],
) -> list[tuple[str, str]] | None:
    """The repository's forms: from a fresh cache, else the contents API (conditional on
    the cached listing's ETag), else a stale cache; None when there are none to be had."""
    cached = _read_cache(cache)
    if cached is not None and now - float(cached[0].get("fetched_at", 0)) < FORMS_TTL:
        return cached[1]
    try:
        folder = client.list_folder(
            repo, FORMS_FOLDER, etag=cached[0].get("etag") if cached else None
        )
        if folder.not_modified and cached is not None:
            _write_cache(cache, cached[1], folder.etag, now)
            return cached[1]
        if not folder.exists:
            _write_cache(cache, [], None, now)
            return []
        files = [
            (name, client.file_text(repo, path))
            for name, path in folder.entries
            if name.endswith((".yml", ".yaml"))
        ]
    except UpstreamError as err:
        notes.append(f"issue forms of {repo} could not be read from GitHub ({err.message})")
        return cached[1] if cached is not None else None
    _write_cache(cache, files, folder.etag, now)
    return files


def choose_form(
    repo: str,
    *,
    forms_dir: Path | None,
    offline: bool,
    env: Mapping[str, str],
    base_url: str | None = None,
    notes: list[str],
    transport: Any = None,
    clock: Clock | None = None,
) -> IssueForm:
    """The bug form to follow: `--forms DIR`, else the repository's (cached / fetched
    unless `offline`), else the generic one; every fallback leaves a note."""
    if forms_dir is not None:
        files: list[tuple[str, str]] | None = read_forms_dir(forms_dir)
        where = str(forms_dir)
    else:
        cache = forms_cache_dir(repo)
        where = f"{repo}'s {FORMS_FOLDER}"
        if offline:
            cached = _read_cache(cache)
            files = cached[1] if cached is not None else None
            if files is None:
                notes.append(f"offline and no cached issue forms of {repo}: using the generic form")
        else:
            url = api_url(env, base_url)
            token = find_token(env, base_url=url)
            client = GitHubClient(
                base_url=url,
                token=token,
                timeout=10.0,
                retry=RetryPolicy(attempts=2, backoff=0.5, max_wait=10.0),
                transport=transport,
                clock=clock,
            )
            with client:
                files = fetch_forms(
                    client, repo, cache=cache, now=(clock or SystemClock()).now(), notes=notes
                )
    if files is None:
        return generic_form()
    forms, skipped = parse_forms(files)
    notes.extend(skipped)
    chosen = pick_bug_form(forms)
    if chosen is None:
        notes.append(f"no bug report form in {where}: using the generic form")
        return generic_form()
    return chosen


# --- draft ---------------------------------------------------------------------------


def env_scripts(bundle: Bundle) -> tuple[tuple[str, str], ...]:
    """(path, text) of the bundle's `sglang.check_env` / vLLM `collect_env.py` output files,
    as the loader kept them (`EvidenceFile.head`: the whole text)."""
    kinds = (EvidenceKind.SGLANG_CHECK_ENV, EvidenceKind.VLLM_COLLECT_ENV)
    return tuple((item.path, item.head) for item in bundle.files if item.kind in kinds)


def related_issues(
    bundle: Bundle,
    analysis: Analysis,
    repo: str,
    *,
    db: Path | None,
    online: bool | None,
    env: Mapping[str, str],
    base_url: str | None = None,
    notes: list[str],
    transport: Any = None,
    clock: Clock | None = None,
) -> tuple[tuple[Candidate, ...], bool]:
    """The duplicate search for `repo`: (candidates best first, whether a real search of
    the repository's issues ran). A missing index is a note, not an error."""
    from reporter.upstream import search
    from reporter.upstream.query import query_from_analysis

    query = query_from_analysis(bundle, analysis, repos=(repo,))
    try:
        outcome = search.run_search(
            query,
            db=db,
            online=online,
            limit=10,
            env=env,
            base_url=base_url,
            transport=transport,
            clock=clock,
        )
    except UsageError as err:
        notes.append(
            f"related issues not searched: {err.message}" + (f" ({err.tip})" if err.tip else "")
        )
        return (), False
    notes.extend(n for n in outcome.notes if "searched them all" not in n)
    if outcome.example_index:
        # The example issues are demo data, not the repository's: never cite them upstream.
        notes.append(
            "related issues left out of the draft: only the example index was there "
            f"(run `report sync {repo}`, or pass --db)"
        )
        return (), False
    return outcome.candidates, outcome.searched > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRun:
    """What `report upstream draft` made."""

    draft: drafting.UpstreamDraft
    form: IssueForm
    notes: tuple[str, ...]
    related: tuple[Candidate, ...] = ()


def make_draft(
    bundle: Bundle,
    analysis: Analysis,
    repo: str,
    *,
    forms_dir: Path | None = None,
    offline: bool = False,
    db: Path | None = None,
    link_related: bool = False,
    base_url: str | None = None,
    env: Mapping[str, str],
    online_search: bool = False,
    transport: Any = None,
    clock: Clock | None = None,
) -> DraftRun:
    """Build the draft; see the module docstring. Network only for forms (never with
    `offline`) and, with `online_search`, for the duplicate search."""
    notes: list[str] = []
    form = choose_form(
        repo,
        forms_dir=forms_dir,
        offline=offline,
        env=env,
        base_url=base_url,
        notes=notes,
        transport=transport,
        clock=clock,
    )
    online: bool | None = False if offline else (True if online_search else None)
    related, searched = related_issues(
        bundle,
        analysis,
        repo,
        db=db,
        online=online,
        env=env,
        base_url=api_url(env, base_url),
        notes=notes,
        transport=transport,
        clock=clock,
    )
    inputs = drafting.DraftInputs(
        bundle=bundle,
        analysis=analysis,
        repo=repo,
        form=form,
        related=related,
        searched=searched,
        env_scripts=env_scripts(bundle),
        link_related=link_related,
    )
    built = drafting.build_draft(inputs)
    return DraftRun(draft=built, form=form, notes=tuple(notes) + built.notes, related=related)


# --- filing --------------------------------------------------------------------------


class Action(StrEnum):
    """What `report upstream file` does (or, in a dry run, would do)."""

    NEW_ISSUE = "new-issue"
    COMMENT = "comment"
    ALREADY_FILED = "already-filed"
    SKIP_COMMENT = "skip-identical-comment"


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Exactly what would be sent."""

    method: str
    url: str
    title: str | None
    labels: tuple[str, ...]
    body: str

    def payload(self) -> dict[str, Any]:
        """The JSON body of the request."""
        if self.title is None:
            return {"body": self.body}
        return {"title": self.title, "body": self.body, "labels": list(self.labels)}


@dataclass(frozen=True, slots=True, kw_only=True)
class FilingPlan:
    """The decision, with its reasons, and why it may not be sent (`refusals`)."""

    action: Action
    repo: str
    target: int | None
    url: str
    request: Request | None
    reasons: tuple[str, ...]
    refusals: tuple[str, ...]
    notes: tuple[str, ...]
    redactions: tuple[redact.RedactionEntry, ...] = ()

    @classmethod
    def already_filed(
        cls, *, repo: str, target: int | None, url: str, reason: str, notes: tuple[str, ...] = ()
    ) -> FilingPlan:
        """The plan that sends nothing because this bundle's issue already exists."""
        return cls(
            action=Action.ALREADY_FILED,
            repo=repo,
            target=target,
            url=url,
            request=None,
            reasons=(reason,),
            refusals=(),
            notes=notes,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FileResult:
    """The plan and, when sent, the URL GitHub gave and where it was recorded."""

    plan: FilingPlan
    sent: bool
    url: str
    recorded: Path | None = None
    reports_updated: tuple[Path, ...] = ()
    """Incident reports whose `upstream_issue` now names `url` (set by the application layer)."""
    # Local writes that failed after GitHub accepted the post: the URL still counts.
    warnings: tuple[str, ...] = ()


# Filing follows the one retry policy of the reads (`policy.RetryPolicy`); the name stays
# for callers that pass their own.
FilingPolicy = RetryPolicy


def _retry(
    what: str,
    action: Callable[[], T],
    *,
    clock: Clock,
    policy: RetryPolicy,
    look: Callable[[], T | None] | None = None,
) -> T:
    """Run `action`; wait out rate limits that fit the policy; after an ambiguous failure
    run `look` (did it happen after all?) before trying again."""
    problem = "no answer"
    for attempt in range(1, policy.attempts + 1):
        try:
            return action()
        except RateLimitedError as err:
            if err.wait > policy.max_wait:
                raise rate_limit_error(
                    what,
                    err.reading,
                    now=clock.now(),
                    policy=policy,
                    tip="run the same command again after that time: it will not file twice",
                    tail="; nothing was sent",
                ) from err
            problem = str(err)
            if attempt < policy.attempts:
                clock.sleep(policy.rate_delay(err.wait, clock.random()))
        except AmbiguousError as err:
            problem = str(err)
            if look is not None:
                found = look()
                if found is not None:
                    return found
            if attempt < policy.attempts:
                clock.sleep(policy.backoff_delay(attempt, clock.random()))
    raise gave_up(
        what,
        problem,
        policy,
        tip="run the same command again later: it looks for what it sent before sending again",
    )


def recorded(root: Path, repo: str, signature: str, ident: str) -> str | None:
    """The URL `upstream.toml` in the bundle records for this repo, signature and bundle."""
    import tomllib

    try:
        data = tomllib.loads((root / RECORD_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for entry in data.get("filed", []):
        if (
            isinstance(entry, dict)
            and str(entry.get("repo", "")).lower() == repo.lower()
            and entry.get("signature") == signature
            and entry.get("bundle_id") == ident
        ):
            return str(entry.get("url", ""))
    return None


def record(
    root: Path,
    *,
    repo: str,
    action: str,
    number: int,
    url: str,
    signature: str,
    ident: str,
    at: datetime,
) -> Path:
    """Append what was sent to `<bundle>/upstream.toml` (not evidence: *.toml is skipped)."""
    from reporter.manifest import TomlDocument, toml_seconds
    from reporter.writer import write_atomic

    path = root / RECORD_NAME
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = (
            "# Written by `report upstream file`: what was sent upstream for this bundle.\n"
            "# Filing reads it first and never sends the same bundle to the same repo twice.\n"
        )
    block = (
        TomlDocument()
        .array_table("filed")
        .key("repo", repo)
        .key("action", action)
        .key("number", number)
        .key("url", url)
        .key("signature", signature)
        .key("bundle_id", ident)
        .key("at", toml_seconds(at))
        .text()
    )
    write_atomic(path, old + block)
    return path


def mark_draft_filed(text: str, url: str) -> str:
    """A draft document with `status: filed` and `upstream_issue: URL` in its front matter."""
    from reporter.render import frontmatter

    block, body, _ = frontmatter.split(text)
    if not block:
        return text
    block = re.sub(r"(?m)^status:.*$", "status: filed", block, count=1)
    if re.search(r"(?m)^upstream_issue:", block):
        block = re.sub(
            r"(?m)^upstream_issue:.*$", f"upstream_issue: {json.dumps(url)}", block, count=1
        )
    return block + body


def duplicate_target(text: str, repo: str) -> int | None:
    """The issue a "Duplicate of #N" line in `text` points to, in `repo`; None if none."""
    for match in _DUPLICATE_RE.finditer(text or ""):
        other = match.group("url_repo") or match.group("repo")
        number = match.group("url_number") or match.group("number")
        if other and other.lower() != repo.lower():
            continue
        return int(number)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Canonical:
    """Where a "Duplicate of" chain ends: the issue, its comments, and the path taken."""

    issue: RemoteIssue | None
    comments: tuple[RemoteComment, ...]
    chain: tuple[int, ...]
    note: str = ""


def canonical_issue(
    tracker: Tracker, repo: str, number: int, *, read: Callable[[str, Callable[[], Any]], Any]
) -> Canonical:
    """Follow "Duplicate of #N" (in the body or a comment) from issue `number` to the end.

    An issue closed as duplicate with no pointer has no known canonical (issue None); a
    cycle or a chain longer than `MAX_DUPLICATE_HOPS` stops where it is, with a note.
    """
    chain = [number]
    current: RemoteIssue = read(f"GET {repo}#{number}", lambda: tracker.issue(repo, number))
    while True:
        comments: tuple[RemoteComment, ...] = read(
            f"GET {repo}#{current.number} comments",
            partial(tracker.comments, repo, current.number),
        )
        target = duplicate_target(current.body, repo)
        for comment in comments:
            target = duplicate_target(comment.body, repo) or target
        if target is None:
            if current.state_reason == "duplicate":
                return Canonical(
                    issue=None,
                    comments=comments,
                    chain=tuple(chain),
                    note=f"#{current.number} is closed as a duplicate without saying of what",
                )
            return Canonical(issue=current, comments=comments, chain=tuple(chain))
        if target in chain or len(chain) > MAX_DUPLICATE_HOPS:
            return Canonical(
                issue=current,
                comments=comments,
                chain=tuple(chain),
                note=f"the duplicate chain {' -> '.join(f'#{n}' for n in chain)} loops or runs long; stopped",
            )
        chain.append(target)
        current = read(f"GET {repo}#{target}", partial(tracker.issue, repo, target))


def signature_decides(analysis: Analysis) -> bool:
    """True when a signature match may by itself pick the issue to comment on: the
    verdict is decided and rests on stacks."""
    return analysis.verdict is not Verdict.INCONCLUSIVE and bool(analysis.classes)


def _same_marker(text: str, signature: str, ident: str) -> bool:
    return drafting.find_marker(text) == (signature, ident)


def _gate(body: str, todos: Sequence[int], leaks: Sequence[redact.Leak], *, what: str) -> list[str]:
    refusals: list[str] = []
    if todos:
        lines = ", ".join(str(n) for n in todos[:8])
        refusals.append(
            f"{what} has {len(todos)} unfilled TODO(reviewer) placeholder(s) (body lines {lines}): "
            "fill them in a reviewed draft and pass it with --draft"
        )
    if leaks:
        shown = "; ".join(str(leak) for leak in leaks[:5])
        refusals.append(
            f"the redaction scan still flags {len(leaks)} value(s) in the {what}: {shown}"
        )
    if len(body) > GITHUB_BODY_LIMIT:
        refusals.append(
            f"the {what} is {len(body):,} characters; GitHub accepts at most {GITHUB_BODY_LIMIT:,}"
        )
    return refusals


def _reviewed_draft(path: Path, built: drafting.UpstreamDraft) -> tuple[str, tuple[str, ...], str]:
    """(title, labels, body) of a reviewed draft file, checked against the bundle's draft."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(
            f"{path}: cannot read it ({err})", tip="pass the draft `report upstream draft` wrote"
        ) from err
    front, body = drafting.split_document(text)
    if front.get("kind") != "upstream-draft":
        raise UsageError(
            f"{path}: not an upstream draft (front matter kind)",
            tip="pass the file `report upstream draft` wrote",
        )
    body = body.lstrip("\n")
    found = drafting.find_marker(body)
    if found is None:
        body = body.rstrip("\n") + "\n" + built.marker + "\n"
    elif found != (built.signature, built.bundle_id):
        raise UsageError(
            f"{path}: drafted from another bundle (marker {found[0]}/{found[1]}, this bundle "
            f"{built.signature}/{built.bundle_id})",
            tip="file it with the bundle it was drafted from",
        )
    title = str(front.get("title") or built.title).strip()
    labels_value = front.get("labels")
    labels = tuple(str(v) for v in labels_value) if isinstance(labels_value, list) else built.labels
    return title, labels, body


def file_upstream(
    bundle: Bundle,
    analysis: Analysis,
    repo: str,
    *,
    yes: bool = False,
    force_new: bool = False,
    base_url: str | None = None,
    draft_file: Path | None = None,
    forms_dir: Path | None = None,
    db: Path | None = None,
    link_related: bool = False,
    env: Mapping[str, str],
    tracker: Tracker | None = None,
    clock: Clock | None = None,
    policy: RetryPolicy | None = None,
    transport: Any = None,
    timeout: int = 15,
    pace: bool = True,
) -> FileResult:
    """`report upstream file`: decide, check, and (with `yes`) send; see the module docstring."""
    clock = clock or SystemClock()
    # A dry run only reads: it gives up sooner on a GitHub it cannot reach.
    policy = policy or (FILING if yes else FILING_DRY_RUN)
    url_base = api_url(env, base_url)
    token = find_token(env, base_url=url_base)
    ident = drafting.bundle_id(bundle)
    signature = analysis.signature.hash
    root = Path(bundle.root) if bundle.root else None
    if root is not None:
        previous = recorded(root, repo, signature, ident)
        if previous:
            plan = FilingPlan.already_filed(
                repo=repo,
                target=None,
                url=previous,
                reason=f"{root / RECORD_NAME} records it: {previous}",
            )
            return FileResult(plan=plan, sent=False, url=previous)
    run = make_draft(
        bundle,
        analysis,
        repo,
        forms_dir=forms_dir,
        offline=False,
        db=db,
        link_related=link_related,
        base_url=url_base,
        env=env,
        online_search=not force_new,
        transport=transport,
        clock=clock,
    )
    built = run.draft
    notes = list(run.notes)
    if draft_file is not None:
        title, labels, body = _reviewed_draft(draft_file, built)
    else:
        title, labels, body = built.title, built.labels, built.body
    own = tracker is None
    if tracker is None:
        tracker = PyGithubTracker(
            base_url=url_base,
            token=token.value if token else None,
            timeout=timeout,
            pace=pace,
            policy=policy,
        )
    try:
        plan = _plan(
            tracker,
            repo,
            bundle,
            analysis,
            built,
            title=title,
            labels=labels,
            body=body,
            force_new=force_new,
            url_base=url_base,
            clock=clock,
            policy=policy,
            dry_run=not yes,
            notes=notes,
            likely=[
                c.issue.record.number
                for c in run.related
                if c.level is Level.LIKELY_DUPLICATE and c.issue.record.repo.lower() == repo.lower()
            ],
        )
        if token is None:
            plan = replace(
                plan,
                refusals=(
                    *plan.refusals,
                    f"no GitHub token for {host_of(url_base)}: {missing_token_tip(host_of(url_base))}",
                )
                if plan.request is not None
                else plan.refusals,
            )
        if not yes or plan.request is None or plan.refusals:
            return FileResult(plan=plan, sent=False, url=plan.url)
        return _send(
            tracker,
            plan,
            bundle=bundle,
            root=root,
            signature=signature,
            ident=ident,
            clock=clock,
            policy=policy,
            draft_file=draft_file,
        )
    finally:
        if own and isinstance(tracker, PyGithubTracker):
            tracker.close()


def _plan(
    tracker: Tracker,
    repo: str,
    bundle: Bundle,
    analysis: Analysis,
    built: drafting.UpstreamDraft,
    *,
    title: str,
    labels: tuple[str, ...],
    body: str,
    force_new: bool,
    url_base: str,
    clock: Clock,
    policy: RetryPolicy,
    dry_run: bool,
    notes: list[str],
    likely: Sequence[int],
) -> FilingPlan:
    signature, ident = built.signature, built.bundle_id
    reasons: list[str] = []

    def read(what: str, action: Callable[[], Any]) -> Any:
        return _retry(what, action, clock=clock, policy=policy)

    try:
        recent: tuple[RemoteIssue, ...] = read(
            f"GET {repo} recent issues", lambda: tracker.recent_issues(repo)
        )
    except UpstreamError as err:
        if not dry_run:
            raise
        notes.append(
            f"GitHub could not be read ({err.message}); the plan assumes no issue exists yet"
        )
        recent = ()
    mine = next((i for i in recent if _same_marker(i.body, signature, ident)), None)
    if mine is not None:
        return FilingPlan.already_filed(
            repo=repo,
            target=mine.number,
            url=mine.url,
            reason=f"#{mine.number} already carries this bundle's marker",
            notes=tuple(notes),
        )
    if not force_new:
        # Open issues reporter filed for the same hang from other bundles come first.
        candidates: list[int] = [
            i.number
            for i in recent
            if i.state == "open" and (drafting.find_marker(i.body) or ("", ""))[0] == signature
        ]
        if candidates and not signature_decides(analysis):
            # Without stacks, or without a verdict, a signature says too little to fold two
            # incidents into one thread: only the duplicate search can name a target.
            reasons.append(
                f"the signature matches {', '.join(f'#{n}' for n in candidates)}, but the verdict "
                f"is {analysis.verdict.value}"
                + ("" if analysis.classes else " and there are no stacks")
                + ": a signature match alone is not enough to comment there"
            )
            candidates = []
        candidates.extend(n for n in likely if n not in candidates)
        for number in candidates[:MAX_CANDIDATES]:
            try:
                canonical = canonical_issue(tracker, repo, number, read=read)
            except UpstreamError as err:
                if not dry_run:
                    raise
                notes.append(f"#{number} could not be read ({err.message})")
                continue
            chain = " -> ".join(f"#{n}" for n in canonical.chain)
            if canonical.note:
                reasons.append(canonical.note)
            target = canonical.issue
            if target is None:
                continue
            if target.state != "open":
                reason = (
                    f" as {target.state_reason.replace('_', ' ')}" if target.state_reason else ""
                )
                reasons.append(
                    f"likely duplicate {chain} ends at #{target.number}, closed{reason}: "
                    "a new issue cites it instead of commenting on a closed thread"
                )
                continue
            if _same_marker(target.body, signature, ident):
                return FilingPlan.already_filed(
                    repo=repo,
                    target=target.number,
                    url=target.url,
                    reason=f"#{target.number} was filed from this bundle",
                    notes=tuple(notes),
                )
            comment = drafting.build_comment(
                bundle,
                analysis,
                issue_text="\n".join([target.body, *(c.body for c in canonical.comments)]),
            )
            reasons.append(
                f"likely duplicate: {chain}"
                + (f" (canonical #{target.number})" if len(canonical.chain) > 1 else "")
            )
            existing = next(
                (
                    c
                    for c in canonical.comments
                    if _same_marker(c.body, signature, ident) or c.body == comment.body
                ),
                None,
            )
            if existing is not None:
                return FilingPlan(
                    action=Action.SKIP_COMMENT,
                    repo=repo,
                    target=target.number,
                    url=existing.url,
                    request=None,
                    reasons=(*reasons, f"an identical comment is already there: {existing.url}"),
                    refusals=(),
                    notes=tuple(notes),
                )
            request = Request(
                method="POST",
                url=f"{url_base}/repos/{repo}/issues/{target.number}/comments",
                title=None,
                labels=(),
                body=comment.body,
            )
            return FilingPlan(
                action=Action.COMMENT,
                repo=repo,
                target=target.number,
                url=target.url,
                request=request,
                reasons=tuple(reasons),
                refusals=tuple(_gate(comment.body, (), comment.leaks, what="comment")),
                notes=tuple(notes),
                redactions=comment.redaction.report,
            )
    else:
        reasons.append("--force-new: filing a new issue whatever the duplicate search finds")
    if not reasons:
        reasons.append("no likely duplicate upstream")
    todos = placeholders(body)
    leaks = redact.leaks(f"{title}\n{body}", redaction=built.redaction)
    refusals = _gate(body, todos, leaks, what="issue body")
    if not title.strip():
        refusals.append("the issue has no title")
    request = Request(
        method="POST", url=f"{url_base}/repos/{repo}/issues", title=title, labels=labels, body=body
    )
    return FilingPlan(
        action=Action.NEW_ISSUE,
        repo=repo,
        target=None,
        url="",
        request=request,
        reasons=tuple(reasons),
        refusals=tuple(refusals),
        notes=tuple(notes),
        redactions=built.redaction.report,
    )


def _send(
    tracker: Tracker,
    plan: FilingPlan,
    *,
    bundle: Bundle,
    root: Path | None,
    signature: str,
    ident: str,
    clock: Clock,
    policy: RetryPolicy,
    draft_file: Path | None,
) -> FileResult:
    """Send the plan's request once; an ambiguous failure looks for the marker first."""
    request = plan.request
    assert request is not None
    repo = plan.repo

    def read(what: str, action: Callable[[], Any]) -> Any:
        return _retry(what, action, clock=clock, policy=policy)

    if plan.action is Action.COMMENT:
        assert plan.target is not None
        number = plan.target

        def look_comment() -> RemoteComment | None:
            comments = read(f"GET {repo}#{number} comments", lambda: tracker.comments(repo, number))
            return next((c for c in comments if _same_marker(c.body, signature, ident)), None)

        comment = _retry(
            f"POST {repo}#{number} comment",
            lambda: tracker.create_comment(repo, number, request.body),
            clock=clock,
            policy=policy,
            look=look_comment,
        )
        url, action, sent_number = comment.url, "comment", number
    else:

        def look_issue() -> RemoteIssue | None:
            recent = read(f"GET {repo} recent issues", lambda: tracker.recent_issues(repo))
            return next((i for i in recent if _same_marker(i.body, signature, ident)), None)

        issue = _retry(
            f"POST {repo} issue",
            lambda: tracker.create_issue(
                repo, title=request.title or "", body=request.body, labels=request.labels
            ),
            clock=clock,
            policy=policy,
            look=look_issue,
        )
        url, action, sent_number = issue.url, "issue", issue.number
    written: Path | None = None
    now = datetime.fromtimestamp(clock.now(), tz=UTC)
    try:
        written = _record_locally(
            root, draft_file, repo, action, sent_number, url, signature, ident, now
        )
    except ReporterError as err:
        # GitHub has the issue: a local write failing (read-only disk, full disk) must not
        # hide its URL. The caller prints the URL and this line.
        tip = f" ({err.tip})" if err.tip else ""
        return FileResult(plan=plan, sent=True, url=url, warnings=(f"{err.message}{tip}",))
    return FileResult(plan=plan, sent=True, url=url, recorded=written)


def _record_locally(
    root: Path | None,
    draft_file: Path | None,
    repo: str,
    action: str,
    sent_number: int,
    url: str,
    signature: str,
    ident: str,
    now: datetime,
) -> Path | None:
    """Record a sent post in the bundle and mark the reviewed draft filed."""
    written: Path | None = None
    if root is not None:
        written = record(
            root,
            repo=repo,
            action=action,
            number=sent_number,
            url=url,
            signature=signature,
            ident=ident,
            at=now,
        )
    if draft_file is not None and action == "issue":
        from reporter.fileio import read_text_bounded
        from reporter.writer import write_atomic

        text = read_text_bounded(draft_file)
        write_atomic(draft_file, mark_draft_filed(text, url))
    return written
