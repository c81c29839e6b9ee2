"""The upstream commands: sync, index import/export, search-upstream, triage, and
upstream draft/file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reporter import console
from reporter.cli.group import cli, echo, echo_lines, notes, subgroup
from reporter.cli.options import (
    BaseUrlOpt,
    BundleArg,
    DbOpt,
    FormsOpt,
    JsonFlag,
    LinkRelatedOpt,
    RepoOpt,
    ReportsOpt,
)
from reporter.console import upstream as text

if TYPE_CHECKING:
    from reporter.upstream.search import SyncProgress

index_app = subgroup(
    "index", "Move upstream issues in and out of the local index, as JSONL (one issue per line)."
)
upstream_app = subgroup(
    "upstream", "Upstream GitHub issues from a bundle: a redacted draft for review, then filing."
)


@cli.command("sync", epilog="Example: report sync sgl-project/sglang vllm-project/vllm")
def sync_cmd(
    repos: Annotated[
        list[str] | None,
        typer.Argument(
            help="Repositories as owner/name (default: the config's `repos`).", show_default=False
        ),
    ] = None,
    db: DbOpt = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="List every issue again instead of only the changed ones."),
    ] = False,
    fixed_in: Annotated[
        bool,
        typer.Option(
            "--fixed-in/--no-fixed-in",
            help="Look up what fixed issues closed as completed (pull request or commit, and "
            "the first release tag with it), up to 200 per run.",
        ),
    ] = True,
    base_url: BaseUrlOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Fetch upstream issues into the local index; later runs fetch only what changed.

    Each page is committed as it arrives: an interrupted sync loses nothing and the next
    run resumes. Token: see `report auth status`.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import sync_upstream
    from reporter.console.documents_sync import sync_document

    with console.progress_bars() as (_line, tick):

        def show(step: SyncProgress) -> None:
            if tick is not None:
                tick(step.repo, step.page, step.last_page or step.page)

        reports, found, path = sync_upstream(
            Context.resolve(base_url=base_url),
            repos or (),
            db=db,
            full=full,
            progress=show,
            fixed_in=fixed_in,
        )
    notes(found)
    if as_json:
        console.emit(sync_document(reports, found, path))
        return
    for line in text.sync_lines(reports, path):
        echo(line)


@index_app.command("import", epilog="Example: report index import issues.jsonl")
def index_import_cmd(
    file: Annotated[Path, typer.Argument(help="JSONL: repo, number, title, body, state, ...")],
    db: DbOpt = None,
    base_url: BaseUrlOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Import issues from JSONL; a bad line is reported with its number and skipped.

    A file with no valid line imports nothing and exits 1. Without --db, the index of
    the host (--base-url / GH_HOST) in the user cache dir.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import index_import
    from reporter.console import documents_upstream as documents

    result, path = index_import(
        Context.resolve(base_url=base_url, read_config=db is None), file, db=db
    )
    if as_json:
        console.emit(documents.import_document(result, path))
        return
    echo_lines((f"skipped {problem}", True) for problem in result.skipped)
    echo(f"imported {result.imported} issues into {path}")


@index_app.command("export", epilog="Example: report index export --repo sgl-project/sglang")
def index_export_cmd(
    repo: Annotated[
        str | None, typer.Option("--repo", help="Only this repository (owner/name).")
    ] = None,
    db: DbOpt = None,
    base_url: BaseUrlOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the indexed issues as JSONL, by repository and number (--json: one object).

    Every stored field goes out, what fixed a closed issue included (`fixed_in`), so an
    export imports back as it was.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import index_export
    from reporter.console import documents_upstream as documents

    ctx = Context.resolve(base_url=base_url, read_config=db is None)
    if not as_json:
        index_export(ctx, write=print, db=db, repo=repo)
        return
    lines: list[str] = []
    _count, path = index_export(ctx, write=lines.append, db=db, repo=repo)
    # An export is data to import again: public issue text, kept byte for byte.
    console.emit(documents.export_document(lines, path, repo))


@cli.command(
    "search-upstream", epilog="Example: report search-upstream fixtures/bundles/tp_desync --offline"
)
def search_upstream_cmd(
    bundle: Annotated[
        Path | None,
        typer.Argument(
            help="A bundle folder (its analysis and manifest are the query), or an indexed "
            "issue as OWNER/REPO#N.",
            show_default=False,
        ),
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            "--repo",
            "-r",
            help="Repository to search (repeatable); default: the manifest's upstream, "
            "else the config's `repos`.",
        ),
    ] = None,
    text_file: Annotated[
        Path | None,
        typer.Option(
            "--text-file",
            help="Search with this text (an issue draft, a pasted dump; - for stdin).",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Most candidates to show (1-100).")
    ] = 10,
    as_json: JsonFlag = False,
    online: Annotated[
        bool | None,
        typer.Option(
            "--online/--offline",
            help="--online: refresh from GitHub first; --offline: the local index only "
            "(without one, the example index shipped with reporter).",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
    base_url: BaseUrlOpt = None,
) -> None:
    """Find upstream issues that look like this hang: likely duplicates first, with reasons.

    With --online, a GitHub that cannot be asked (unreachable, an error, a rate limit) is
    a failure (exit 1), never an empty result; --offline searches the local index. The
    last line says which index answered.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import search_upstream

    outcome = search_upstream(
        Context.resolve(base_url=base_url),
        bundle,
        repos=repo or (),
        text_file=text_file,
        limit=limit,
        online=online,
        db=db,
    )
    notes(outcome.notes)
    if as_json:
        from reporter.console import documents_upstream as documents

        console.emit(documents.search_document(outcome))
    else:
        echo(text.search_table(outcome))


@cli.command("triage", epilog="Example: report triage vllm-project/vllm --since 2025-06-01")
def triage_cmd(
    target: Annotated[
        str,
        typer.Argument(
            help="OWNER/REPO#N (one indexed issue), or OWNER/REPO with --since or --text-file.",
            show_default=False,
        ),
    ],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Every issue opened since this date (2025-01-31)."),
    ] = None,
    text_file: Annotated[
        Path | None,
        typer.Option("--text-file", help="Triage this text (a pasted issue; - for stdin)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Candidates per issue (1-100).")] = 5,
    as_json: JsonFlag = False,
    comment: Annotated[
        bool,
        typer.Option("--comment", help="Print the possible-duplicates comment (a dry run)."),
    ] = False,
    post: Annotated[
        bool,
        typer.Option(
            "--post",
            help="Post that comment on the issue (never twice: an earlier one is found by its "
            "marker). Needs GITHUB_TOKEN.",
        ),
    ] = False,
    db: DbOpt = None,
    base_url: BaseUrlOpt = None,
) -> None:
    """List likely duplicates of tracker issues for maintainers, never the issue itself."""
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import triage

    outcome = triage(
        Context.resolve(base_url=base_url),
        target,
        since=since,
        text_file=text_file,
        limit=limit,
        db=db,
        comment=comment,
        post=post,
    )
    notes(outcome.notes)
    if outcome.comment is not None:
        result = outcome.comment
        if result.posted_url is not None:
            echo(f"posted: {result.posted_url}", file=sys.stderr)
        elif result.skipped is not None:
            echo(f"not posted: {result.skipped}", file=sys.stderr)
        if result.body is not None and not as_json:
            sys.stdout.write(result.body)
            return
    if as_json:
        from reporter.console import documents_upstream as documents

        console.emit(documents.triage_document(outcome.rows, outcome.notes))
        return
    sys.stdout.write(text.triage_text(outcome))


@upstream_app.command(
    "draft", epilog="Example: report upstream draft fixtures/bundles/full_incident --offline"
)
def upstream_draft_cmd(
    bundle: BundleArg,
    repo: RepoOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Draft path (default: reports/<date>-<slug>.upstream-<repo>.md); - prints it.",
        ),
    ] = None,
    forms: FormsOpt = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="No network: cached or generic form; related issues from the local (or "
            "example) index.",
        ),
    ] = False,
    db: DbOpt = None,
    link_related: LinkRelatedOpt = False,
    base_url: BaseUrlOpt = None,
    as_json: JsonFlag = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing file that is not an upstream draft."),
    ] = False,
    force_new: Annotated[
        bool,
        typer.Option(
            "--force-new",
            help="Exit 0 even when a likely duplicate was fixed in a newer release than the "
            "deployment's (the draft still leads with that fix).",
        ),
    ] = False,
) -> None:
    """Write a redacted upstream issue draft for review, following the repository's bug form.

    Secrets, addresses, host and user names become placeholders (<host-1>); mentions and
    issue references in evidence are made inert. `report lint` checks the draft again.
    Known fix first: when a likely duplicate was fixed in a release newer than the
    deployment's, that upgrade is the draft's first line and the exit code is 1 (unless
    --force-new).
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import upstream_draft
    from reporter.console import documents_upstream as documents

    made = upstream_draft(
        Context.resolve(base_url=base_url),
        bundle,
        repo=repo,
        out=out,
        forms=forms,
        offline=offline,
        db=db,
        link_related=link_related,
        force=force,
    )
    fix = made.run.known_fix
    upgrade = fix is not None and fix.has_fix is False
    if upgrade and not as_json:
        # The news first: an upgrade answers this hang; a new issue would not.
        for line in text.known_fix_lines(made, force_new=force_new):
            echo(line, file=sys.stderr, flush=True)
    notes(made.run.notes)
    to_stdout = str(made.path) == "-"
    if as_json:
        console.emit(documents.upstream_draft_document(made))
    else:
        if to_stdout:
            sys.stdout.write(made.run.draft.document)
        echo_lines((line, err or to_stdout) for line, err in text.upstream_draft_lines(made))
    if upgrade and not force_new:
        raise typer.Exit(1)


@upstream_app.command(
    "file", epilog="Example: report upstream file bundles/incident-42 --draft reports/x.md --yes"
)
def upstream_file_cmd(
    bundle: BundleArg,
    repo: RepoOpt = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Send it. Without --yes: a dry run that prints it.")
    ] = False,
    force_new: Annotated[
        bool,
        typer.Option(
            "--force-new", help="File a new issue even when a likely duplicate exists upstream."
        ),
    ] = False,
    base_url: BaseUrlOpt = None,
    draft: Annotated[
        Path | None,
        typer.Option("--draft", help="Send this reviewed draft (from `upstream draft`)."),
    ] = None,
    forms: FormsOpt = None,
    db: DbOpt = None,
    link_related: LinkRelatedOpt = False,
    reports: ReportsOpt = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", help="The incident report whose upstream_issue gets the filed URL."
        ),
    ] = None,
    show_body: Annotated[
        bool,
        typer.Option("--show-body", help="Print the issue body also when filing is refused."),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="File although upstream cannot act on it yet (no stacks, or no verdict).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """File the bundle upstream, or add "+1 with evidence" to the issue it duplicates.

    Runs the duplicate search first and follows "Duplicate of #N" to the canonical issue.
    Never sends anything the redaction scan still flags or with unfilled TODOs, and never
    files twice (a hidden marker is looked for before any retry). Exit 1 when refused;
    the refusal and its fix are printed first.
    """
    # Lazy: start-up; `report --help` must not load reporter.app.
    from reporter.app.settings import Context
    from reporter.app.upstream import upstream_file
    from reporter.console import documents_upstream as documents

    result = upstream_file(
        Context.resolve(base_url=base_url),
        bundle,
        repo=repo,
        yes=yes,
        force_new=force_new,
        draft=draft,
        forms=forms,
        db=db,
        link_related=link_related,
        reports=reports,
        report=report,
        force=force,
    )
    refused = bool(result.plan.refusals) and not result.sent
    if as_json:
        notes(result.plan.notes)
        console.emit(documents.upstream_file_document(result))
    else:
        # The news first: a refusal and its fix, then notes, then what would be sent.
        for line in text.refusal_lines(result):
            echo(line, file=sys.stderr, flush=True)
        notes(result.plan.notes)
        sys.stderr.flush()
        echo(text.upstream_file_text(result, show_body=show_body))
    # Filed upstream, but a local write failed: the URL above is printed either way.
    echo_lines((f"warning: {warning}", True) for warning in result.warnings)
    if refused:
        raise typer.Exit(1)
