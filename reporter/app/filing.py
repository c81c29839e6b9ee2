"""The use cases of `report upstream draft` and `report upstream file`; nothing here prints.

Draft (works with no network and no token)::

    bundle + analysis ──► forms (--forms DIR | cache | contents API | generic)
                      ──► related issues (local index; --offline: the example index)
                      ──► draft.build_draft ──► document for review (front matter + body)

File (a dry run unless `yes`)::

    upstream cannot act on it (no stacks, or no verdict)? ─► refused unless --force
    already recorded in <reports>/upstream-filed.toml? ─► already filed, stop
    draft (or the reviewed --draft FILE) ─► `publish.plan_filing` decides and gates
    with `yes` and no refusal ─► `publish.send`
    record the URL in <reports>/upstream-filed.toml (and the --draft file's front matter)

This module owns what the domain code must not do: the forms cache in the user cache
dir, reading the bundle's env-script outputs and the reviewed draft, the host and token
from the settings' environment, the clock, and the filing record. The record lives
beside the reports (`reports/upstream-filed.toml`), never in the evidence folder: a
bundle may be read-only, and evidence is not where reporter writes its own state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reporter.analysis import Analysis, Verdict
from reporter.app import issues
from reporter.app.issues import GitHubAccess
from reporter.core import rules as data_files
from reporter.core.errors import OutputError, ReporterError, UpstreamError, UsageError
from reporter.core.fileio import read_text_bounded
from reporter.core.writer import write_atomic
from reporter.evidence import kinds
from reporter.load.manifest import TomlDocument, toml_seconds
from reporter.model import Bundle
from reporter.render import frontmatter
from reporter.upstream import draft as drafting
from reporter.upstream.auth import host_of, missing_token_tip
from reporter.upstream.filing import HttpTracker, Tracker
from reporter.upstream.fixes import has_fix
from reporter.upstream.forms import IssueForm, generic_form, parse_forms, pick_bug_form
from reporter.upstream.github import GitHubClient
from reporter.upstream.policy import FILING, FILING_DRY_RUN, RetryPolicy, SystemClock
from reporter.upstream.publish import FileResult, FilingPlan, Sent, plan_filing, send
from reporter.upstream.query import query_from_analysis
from reporter.upstream.rank import Candidate, Level
from reporter.upstream.search import SearchOutcome

FORMS_FOLDER = ".github/ISSUE_TEMPLATE"
FORMS_TTL = 24 * 3600
RECORD_NAME = "upstream-filed.toml"
# Before issue 33 the record was written into the bundle; it is still read there.
LEGACY_RECORD_NAME = "upstream.toml"


def forms_cache_dir(repo: str, cache_dir: Path | None = None, host: str = "github.com") -> Path:
    """Where a repository's issue forms are cached: per host, then per repository
    (`forms/github.com/owner+name`): `acme/serve` on two hosts are two repositories."""
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in host.lower()) or "github.com"
    return issues.cache_root(cache_dir) / "forms" / safe / repo.replace("/", "+")


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


def shipped_forms(repo: str, host: str) -> tuple[tuple[str, str], str] | None:
    """The real bug form of `repo` shipped in reporter/data/forms (github.com only):
    ((file name, text), "from <source address>"), or None when none is shipped."""
    import tomllib

    if host.lower() not in ("github.com", "api.github.com"):
        return None
    sources = tomllib.loads(data_files.read_text("forms/SOURCES.toml"))
    entries = sources.get(repo.lower())
    if not isinstance(entries, list) or not entries:
        return None
    entry = entries[0]
    name = str(entry["file"])
    text = data_files.read_text(f"forms/{name}")
    return (Path(name).name, text), f"commit {str(entry['commit'])[:12]}"


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
    access: GitHubAccess,
    notes: list[str],
) -> IssueForm:
    """The bug form to follow: `--forms DIR`, else the repository's (cached / fetched
    unless `offline`), else the generic one; every fallback leaves a note."""
    if forms_dir is not None:
        files: list[tuple[str, str]] | None = read_forms_dir(forms_dir)
        where = str(forms_dir)
    else:
        cache = forms_cache_dir(repo, access.cache_dir, access.host)
        where = f"{repo}'s {FORMS_FOLDER}"
        if offline:
            cached = _read_cache(cache)
            files = cached[1] if cached is not None else None
        else:
            retry = RetryPolicy(attempts=2, backoff=0.5, max_wait=10.0)
            with access.client(timeout=10.0, retry=retry) as client:
                now = (access.clock or SystemClock()).now()
                files = fetch_forms(client, repo, cache=cache, now=now, notes=notes)
        if files is None:
            shipped = shipped_forms(repo, access.host)
            if shipped is not None:
                files, where = [shipped[0]], shipped[1]
                notes.append(f"using the {repo} bug form shipped with reporter ({where})")
            elif offline:
                notes.append(f"offline and no cached issue forms of {repo}: using the generic form")
    if files is None:
        return generic_form()
    forms, skipped = parse_forms(files)
    notes.extend(skipped)
    chosen = pick_bug_form(forms)
    if chosen is None:
        notes.append(f"no bug report form in {where}: using the generic form")
        return generic_form()
    return chosen


def env_scripts(bundle: Bundle) -> tuple[tuple[str, str], ...]:
    """(path, text) of the bundle's `sglang.check_env` / vLLM `collect_env.py` output files,
    as the loader kept them (`EvidenceFile.head`: the whole text)."""
    return tuple(
        (item.path, item.head) for item in bundle.files if kinds.ENTRIES[item.kind].kept_whole
    )


def related_issues(
    bundle: Bundle,
    analysis: Analysis,
    repo: str,
    *,
    db: Path | None,
    online: bool | None,
    access: GitHubAccess,
    notes: list[str],
    found: list[drafting.KnownFix] | None = None,
) -> tuple[tuple[Candidate, ...], bool]:
    """The duplicate search for `repo`: (candidates best first, whether a real search of
    the repository's issues ran). A missing index is a note, not an error. Likely
    duplicates fixed in a release go to `found`, best first."""
    query = query_from_analysis(bundle, analysis, repos=(repo,))
    try:
        outcome = issues.run_search(query, db=db, online=online, limit=10, access=access)
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
    if found is not None:
        found.extend(known_fixes(outcome))
    # Weak matches (shown on the command line when nothing is related) are no evidence
    # to cite upstream.
    kept = tuple(c for c in outcome.candidates if c.level is not Level.WEAK)
    return kept, outcome.searched > 0


def cannot_act(analysis: Analysis) -> str:
    """Why upstream cannot act on this bundle yet, and what to capture; "" when it can."""
    capture = (
        "capture py-spy dumps of every rank while it hangs, two or three a few seconds "
        "apart (`report collect --match PATTERN --snapshots 3`), then draft again"
    )
    if not analysis.classes:
        return (
            "upstream cannot act on this yet: the evidence has no stack dump, so nothing says "
            f"where the engine waits; {capture}"
        )
    if analysis.verdict is Verdict.INCONCLUSIVE:
        return (
            "upstream cannot act on this yet: the stacks do not show a hang (no rank waits "
            f"for another, nothing stays stuck); {capture}"
        )
    return ""


def known_fixes(outcome: SearchOutcome) -> list[drafting.KnownFix]:
    """The likely duplicates of a search that a release fixed, best first, with how the
    deployment's version stands against that release."""
    deployed = {r.lower(): v for r, v in outcome.query.deployed}
    out: list[drafting.KnownFix] = []
    for candidate in outcome.candidates:
        record = candidate.issue.record
        fix = outcome.fixes.get((record.repo.lower(), record.number))
        if candidate.level is not Level.LIKELY_DUPLICATE or fix is None or not fix.tag:
            continue
        version = deployed.get(record.repo.lower(), "")
        out.append(
            drafting.KnownFix(
                repo=record.repo,
                number=record.number,
                url=record.html_url,
                tag=fix.tag,
                change=fix.ref,
                deployed=version,
                has_fix=has_fix(fix.tag, version) if version else None,
            )
        )
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRun:
    """What `report upstream draft` made."""

    draft: drafting.UpstreamDraft
    form: IssueForm
    notes: tuple[str, ...]
    related: tuple[Candidate, ...] = ()
    known_fix: drafting.KnownFix | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftSource:
    """What an upstream draft is made from: the bundle and its analysis, the repository,
    the forms folder (`--forms`; None: the repository's own), the index for related
    issues (`--db`; None: the default) and whether the draft links them."""

    bundle: Bundle
    analysis: Analysis
    repo: str
    forms_dir: Path | None = None
    db: Path | None = None
    link_related: bool = False


def make_draft(
    source: DraftSource,
    *,
    access: GitHubAccess,
    offline: bool = False,
    online_search: bool = False,
) -> DraftRun:
    """Build the draft; see the module docstring. Network only for forms (never with
    `offline`) and, with `online_search`, for the duplicate search."""
    bundle, analysis, repo = source.bundle, source.analysis, source.repo
    notes: list[str] = []
    form = choose_form(
        repo, forms_dir=source.forms_dir, offline=offline, access=access, notes=notes
    )
    online: bool | None = False if offline else (True if online_search else None)
    fixed: list[drafting.KnownFix] = []
    related, searched = related_issues(
        bundle, analysis, repo, db=source.db, online=online, access=access, notes=notes, found=fixed
    )
    inputs = drafting.DraftInputs(
        bundle=bundle,
        analysis=analysis,
        repo=repo,
        form=form,
        related=related,
        searched=searched,
        env_scripts=env_scripts(bundle),
        link_related=source.link_related,
        known_fix=fixed[0] if fixed else None,
    )
    built = drafting.build_draft(inputs)
    return DraftRun(
        draft=built,
        form=form,
        notes=tuple(notes) + built.notes,
        related=related,
        known_fix=fixed[0] if fixed else None,
    )


def recorded(
    state: Path, repo: str, signature: str, ident: str, *, bundle_root: Path | None = None
) -> str | None:
    """The URL the filing record in `state` (the reports folder) holds for this repo,
    signature and bundle; also the record an older reporter wrote into the bundle."""
    for path in (
        state / RECORD_NAME,
        *(() if bundle_root is None else (bundle_root / LEGACY_RECORD_NAME,)),
    ):
        url = _recorded_in(path, repo, signature, ident)
        if url:
            return url
    return None


def _recorded_in(path: Path, repo: str, signature: str, ident: str) -> str | None:
    import tomllib

    if not path.exists():
        return None
    try:
        data = tomllib.loads(read_text_bounded(path, max_bytes=4 << 20))
    except (ReporterError, ValueError) as err:
        raise UsageError(
            f"{path}: cannot read the filing record ({getattr(err, 'message', err)})",
            tip="fix or remove it: it lists what was filed from this bundle",
        ) from err
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
    state: Path,
    *,
    repo: str,
    action: str,
    number: int,
    url: str,
    signature: str,
    ident: str,
    at: datetime,
    bundle: str = "",
) -> Path:
    """Append what was sent to `<state>/upstream-filed.toml` (state: the reports folder)."""
    path = state / RECORD_NAME
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = (
            "# Written by `report upstream file`: what was sent upstream, per bundle.\n"
            "# Filing reads it first and never sends the same bundle to the same repo twice.\n"
        )
    except OSError as err:
        raise OutputError(f"{path}: cannot read the filing record ({err})") from err
    try:
        state.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(
            f"{state}: cannot create the folder for the filing record ({err})",
            tip="pass --reports DIR (a writable folder)",
        ) from err
    block = (
        TomlDocument()
        .array_table("filed")
        .key("repo", repo)
        .key("action", action)
        .key("number", number)
        .key("url", url)
        .key("signature", signature)
        .key("bundle_id", ident)
        .key("bundle", bundle)
        .key("at", toml_seconds(at))
        .text()
    )
    write_atomic(path, old + block)
    return path


def mark_draft_filed(text: str, url: str) -> str:
    """A draft document with `status: filed` and `upstream_issue: URL` in its front matter."""
    block, body, _ = frontmatter.split(text)
    if not block:
        return text
    block = re.sub(r"(?m)^status:.*$", "status: filed", block, count=1)
    if re.search(r"(?m)^upstream_issue:", block):
        block = re.sub(
            r"(?m)^upstream_issue:.*$", f"upstream_issue: {json.dumps(url)}", block, count=1
        )
    return block + body


def _reviewed_draft(
    path: Path, built: drafting.UpstreamDraft
) -> tuple[str, tuple[str, ...], str, str]:
    """(title, labels, body, the file's text) of a reviewed draft file, checked against
    the bundle's draft."""
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
    return title, labels, body, text


def file_upstream(
    source: DraftSource,
    *,
    yes: bool = False,
    force_new: bool = False,
    force: bool = False,
    draft_file: Path | None = None,
    access: GitHubAccess,
    reports: Path = Path("reports"),
    tracker: Tracker | None = None,
    policy: RetryPolicy | None = None,
    timeout: int = 15,
    pace: bool = True,
) -> FileResult:
    """`report upstream file`: decide, check, and (with `yes`) send; see the module docstring."""
    bundle, analysis, repo = source.bundle, source.analysis, source.repo
    clock = access.clock or SystemClock()
    access = replace(access, clock=clock)
    # A dry run only reads: it gives up sooner on a GitHub it cannot reach.
    policy = policy or (FILING if yes else FILING_DRY_RUN)
    url_base = access.api_url
    token = access.token()
    ident = drafting.bundle_id(bundle)
    signature = analysis.signature.hash
    root = Path(bundle.root) if bundle.root else None
    previous = recorded(reports, repo, signature, ident, bundle_root=root)
    if previous and not force_new:
        plan = FilingPlan.already_filed(
            repo=repo,
            target=None,
            url=previous,
            reason=f"{reports / RECORD_NAME} records it: {previous} (--force-new files again)",
        )
        return FileResult(plan=plan, sent=False, url=previous)
    run = make_draft(source, access=access, online_search=not force_new)
    built = run.draft
    notes = list(run.notes)
    if previous:
        notes.append(f"--force-new: filing again, although {previous} was filed from this bundle")
    if draft_file is not None:
        title, labels, body, document = _reviewed_draft(draft_file, built)
        where = str(draft_file)
    else:
        title, labels, body, document = built.title, built.labels, built.body, built.document
        where = "the draft (`report upstream draft` writes it)"
    own = tracker is None
    if tracker is None:
        # The client every read uses: one deadline, body cap, host check and error tree.
        tracker = HttpTracker(
            base_url=url_base,
            token=token,
            pace=pace,
            policy=policy,
            client=access.client(timeout=float(timeout)),
        )
    try:
        plan = plan_filing(
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
            filed_before=frozenset({previous}) if previous else frozenset(),
            document=document,
            where=where,
            likely=[
                c.issue.record.number
                for c in run.related
                if c.level is Level.LIKELY_DUPLICATE and c.issue.record.repo.lower() == repo.lower()
            ],
        )
        blocked = cannot_act(analysis)
        if blocked and not force and plan.request is not None:
            # Upstream cannot act on it: a new issue or a comment without stacks or a
            # verdict costs a maintainer a round trip asking for them.
            plan = replace(plan, refusals=(blocked, *plan.refusals))
        fix = run.known_fix
        if fix is not None and fix.has_fix is False and not force_new:
            # Known fixes first: an upgrade answers this hang; a new issue would not.
            plan = replace(
                plan,
                refusals=(
                    *plan.refusals,
                    f"{fix.repo}#{fix.number} is a likely duplicate fixed in {fix.tag} "
                    f"({fix.change}); this deployment runs {fix.deployed}: upgrade to "
                    f"{fix.tag} or later first (--force-new files anyway)",
                ),
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
        sent = send(
            tracker,
            plan,
            signature=signature,
            ident=ident,
            clock=clock,
            policy=policy,
            filed_before=frozenset({previous}) if previous else frozenset(),
        )
        return _recorded_result(
            plan,
            sent,
            root=reports,
            bundle=str(root or ""),
            draft_file=draft_file,
            signature=signature,
            ident=ident,
            now=clock.now(),
        )
    finally:
        if own and isinstance(tracker, HttpTracker):
            tracker.close()


def _recorded_result(
    plan: FilingPlan,
    sent: Sent,
    *,
    root: Path | None,
    bundle: str = "",
    draft_file: Path | None,
    signature: str,
    ident: str,
    now: float,
) -> FileResult:
    """The result of a sent plan, once recorded in the bundle and the reviewed draft."""
    at = datetime.fromtimestamp(now, tz=UTC)
    try:
        written = _record_locally(
            root, draft_file, plan.repo, sent, (signature, ident), at, bundle=bundle
        )
    except ReporterError as err:
        # GitHub has the issue: a local write failing (read-only disk, full disk) must not
        # hide its URL. The caller prints the URL and this line.
        tip = f" ({err.tip})" if err.tip else ""
        return FileResult(plan=plan, sent=True, url=sent.url, warnings=(f"{err.message}{tip}",))
    return FileResult(plan=plan, sent=True, url=sent.url, recorded=written)


def _record_locally(
    root: Path | None,
    draft_file: Path | None,
    repo: str,
    sent: Sent,
    marker: tuple[str, str],
    now: datetime,
    *,
    bundle: str = "",
) -> Path | None:
    """Record a sent post in the bundle and mark the reviewed draft filed; `marker` is
    the (signature, bundle id) pair the post carries."""
    written: Path | None = None
    if root is not None:
        written = record(
            root,
            repo=repo,
            action=sent.action,
            number=sent.number,
            url=sent.url,
            signature=marker[0],
            ident=marker[1],
            at=now,
            bundle=bundle,
        )
    if draft_file is not None and sent.action == "issue":
        text = read_text_bounded(draft_file)
        write_atomic(draft_file, mark_draft_filed(text, sent.url))
    return written
