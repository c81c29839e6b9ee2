"""Use cases behind the CLI: analyze evidence, draft a report, write a starter manifest.

Each function takes paths and options, calls the loader, analysis and renderer,
and returns a result object; printing is the CLI's job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reporter import bundle as bundle_io
from reporter.analysis import Analysis, Similarity, analyze, format_ranks, to_json
from reporter.analysis.export import dumps_deep
from reporter.errors import InputError, OutputError, UsageError
from reporter.fileio import check_regular, read_text_bounded
from reporter.manifest import MANIFEST_NAME
from reporter.model import Bundle, innermost_python
from reporter.render import markdown as md
from reporter.secrets import mask_data, mask_text
from reporter.writer import check_target, locked, write_atomic

if TYPE_CHECKING:
    from reporter.analysis.diff import EnvDiff
    from reporter.collect import CollectRequest, CollectSummary
    from reporter.config import Settings
    from reporter.guess import Suggestion
    from reporter.render.answer import SeenReport
    from reporter.render.lint import Finding
    from reporter.render.regions import MergeResult
    from reporter.render.status import ReportStatus
    from reporter.sources import SourceRoots
    from reporter.upstream.github import RateLimit
    from reporter.upstream.index import ImportResult
    from reporter.upstream.publish import DraftRun, FileResult
    from reporter.upstream.query import Query as UpstreamQuery
    from reporter.upstream.redact import RedactionEntry
    from reporter.upstream.search import SearchOutcome, SyncProgress, SyncReport
    from reporter.upstream.triage import TriageOutcome


# Reports, drafts and query texts are Markdown a person edits: 64 MiB is far beyond any.
_REPORT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Knobs shared by the commands that read evidence."""

    similarity: Similarity = Similarity.LINES_IGNORED
    max_file_bytes: int = bundle_io.DEFAULT_MAX_FILE_BYTES
    strict: bool = False
    source_roots: tuple[Path, ...] = ()
    """`--source-root`: checkouts or site-packages to cut code excerpts from."""
    baseline: Path | None = None
    """`--baseline`: the last good run (a bundle folder or an env file); overrides the manifest's."""
    context: int = 6
    """`--context`: lines shown on each side of a frame in automatic code excerpts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftResult:
    """Where a draft went, and whether an older file was kept as a backup."""

    path: Path
    backup: Path | None
    unchanged: bool
    analysis: Analysis
    merge: MergeResult | None = None
    """What happened to each region, when the draft was merged into an existing report."""
    charts: Path | None = None
    """The metrics SVG written beside the report, when the bundle has metrics."""


def now_utc() -> datetime:
    """The clock: `SOURCE_DATE_EPOCH` when set (reproducible output), else the real time."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC)
    return datetime.now(tz=UTC)


def load_and_analyze(paths: Sequence[Path], options: Options) -> tuple[Bundle, Analysis]:
    """Load the evidence and analyze it; `strict` turns parser warnings into an error.

    A lone `-` reads one pasted dump from stdin.
    """
    if [str(p) for p in paths] == ["-"]:
        import sys

        if sys.stdin.isatty():
            print("reading a dump from stdin; end it with Ctrl-D", file=sys.stderr)
        text = sys.stdin.read()
        if not text.strip():
            raise UsageError("stdin is empty", tip="pipe or paste a py-spy or faulthandler dump")
        bundle = bundle_io.load_text(text, max_file_bytes=options.max_file_bytes)
    else:
        bundle = bundle_io.load(paths, max_file_bytes=options.max_file_bytes)
    if options.strict and bundle.warnings:
        first = bundle.warnings[0]
        more = f" (and {len(bundle.warnings) - 1} more)" if len(bundle.warnings) > 1 else ""
        raise InputError(
            f"{first}{more}", tip="fix or recapture the evidence, or drop --strict to read past it"
        )
    if options.baseline is not None:
        from dataclasses import replace

        baseline = bundle_io.load_baseline(options.baseline, options.max_file_bytes)
        bundle = replace(bundle, baseline=baseline)
    return bundle, analyze(
        bundle,
        similarity=options.similarity,
        sources=_source_roots(bundle, options.source_roots),
        context=options.context,
    )


def _source_roots(bundle: Bundle, roots: Sequence[Path]) -> SourceRoots | None:
    """The `--source-root` folders, then the bundle's own `source_root`; None when neither."""
    from reporter.sources import SourceRoots

    all_roots = list(roots)
    if bundle.root is not None and bundle.manifest.source_root:
        all_roots.append(Path(bundle.root) / bundle.manifest.source_root)
    return SourceRoots(all_roots) if all_roots else None


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRun:
    """`report diff`: the ranked changes between two runs."""

    diff: EnvDiff


def diff_runs(
    good: Path,
    bad: Path,
    *,
    source_roots: Sequence[Path] = (),
    max_file_bytes: int = bundle_io.DEFAULT_MAX_FILE_BYTES,
) -> DiffRun:
    """Compare the last good run with the bad one: two bundles, or two env / cmdline / freeze files.

    `source_roots` is empty or two folders (GOOD's source tree, then BAD's), hashed file by file.
    """
    from reporter.analysis.diff import diff_bundles
    from reporter.sources import hash_tree

    if len(source_roots) not in (0, 2):
        raise UsageError(
            f"--source-root given {len(source_roots)} times",
            tip="give it twice: GOOD's source tree, then BAD's",
        )
    sides = [bundle_io.load([path], max_file_bytes=max_file_bytes) for path in (good, bad)]
    trees = [hash_tree(root) for root in source_roots] if source_roots else [None, None]
    return DiffRun(
        diff=diff_bundles(
            sides[0],
            sides[1],
            good_tree=trees[0],
            bad_tree=trees[1],
            good_name=str(good),
            bad_name=str(bad),
        )
    )


def diff_json_text(run: DiffRun) -> str:
    """The `diff --json` document: `{"changes": [...]}` in rank order, then counts and notes."""
    from reporter.analysis.diff import diff_json

    return json.dumps(mask_data(diff_json(run.diff)), indent=2, ensure_ascii=False) + "\n"


def diff_text(run: DiffRun, *, limit: int = 20) -> str:
    """The ranked changes for a terminal: one line each, the reasons under the first few."""
    diff = run.diff
    lines = [f"{diff.good} -> {diff.bad}: {len(diff.changes)} changes"]
    for rank, change in enumerate(diff.changes[:limit], start=1):
        before = change.before if change.before is not None else "(absent)"
        after = change.after if change.after is not None else "(absent)"
        lines.append(
            f"{rank:>3}. [{change.score:>4}] {change.kind.value:<8} {change.key}: {before} -> {after}"
        )
        if rank <= 3:
            lines.append(f"          why: {'; '.join(change.why)}")
    if len(diff.changes) > limit:
        lines.append(f"  … {len(diff.changes) - limit} more (see --json or --limit)")
    equal = ", ".join(f"{n} {kind.value}" for kind, n in diff.unchanged)
    if equal:
        lines.append(f"unchanged: {equal}")
    lines.extend(f"note: {note}" for note in diff.notes)
    return "\n".join(lines)


def analysis_json(
    analysis: Analysis, bundle: Bundle | None = None, *, seen: Sequence[SeenReport] = ()
) -> str:
    """The `analyze --json` document, byte-stable for the same evidence.

    With the `bundle`, it adds `headline`, `summary_lines` (each summary line with its
    topic and sources), `next_steps` (action, why, rule) and `seen_before`.

    One top-level key per line and one list item per line: readable, and written by
    the C encoder (`indent=` switches json to its pure-Python encoder, five times
    slower on a 4,096-rank bundle).
    """
    data = to_json(analysis)
    if bundle is not None:
        from reporter.render import answer

        ans = answer.build(bundle, analysis, seen=seen)
        data["headline"] = ans.title
        # `summary` stays the verdict paragraph (a documented key); the lines go beside it.
        data["summary_lines"] = [
            {"topic": line.topic, "text": line.text, "sources": list(line.sources)}
            for line in ans.lines
        ]
        data["next_steps"] = [
            {"action": step.action, "why": step.why, "rule": step.rule} for step in ans.steps
        ]
        data["seen_before"] = [
            {"path": s.path, "date": s.date, "status": s.status, "same": s.same} for s in seen
        ]
    masked = mask_data(data)
    assert isinstance(masked, dict)
    data = masked
    return _json_lines(data)


def _json_lines(data: dict[str, object]) -> str:
    def dump(value: object) -> str:
        try:
            return json.dumps(value, ensure_ascii=False)
        except RecursionError:
            # A value nested past the C encoder's limit (the tree of a 10,000-frame stack).
            return dumps_deep(value)

    out = ["{"]
    for index, (key, value) in enumerate(data.items()):
        comma = "," if index < len(data) - 1 else ""
        if isinstance(value, list) and value:
            out.append(f"  {dump(key)}: [")
            out.extend(f"    {dump(item)}," for item in value[:-1])
            out.append(f"    {dump(value[-1])}")
            out.append(f"  ]{comma}")
        else:
            out.append(f"  {dump(key)}: {dump(value)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"


def render_draft(
    bundle: Bundle,
    analysis: Analysis,
    *,
    now: datetime,
    chart_file: str | None = None,
    seen: Sequence[SeenReport] = (),
) -> str:
    """The Markdown report text for a loaded, analyzed bundle.

    `chart_file` is the name of the metrics SVG beside the report (default: the one
    beside the default report path); `seen` are earlier reports of the same or a
    similar hang (`seen_before`). Secret-shaped values are masked (`mask_secrets`).
    """
    # Imported here: Jinja costs `report analyze` start-up time it never uses.
    from reporter.render import answer, regions
    from reporter.render.mask import mask_secrets
    from reporter.render.render import render_report
    from reporter.render.view import build_view

    if chart_file is None:
        chart_file = chart_path(default_report_path(bundle, analysis, now=now)).name
    view = build_view(
        bundle,
        analysis,
        raw=_raw_texts(bundle),
        chart_file=chart_file,
        answer=answer.build(bundle, analysis, seen=seen),
    )
    return regions.seal(mask_secrets(render_report(view))[0])


DEFAULT_REPORTS = Path("reports")


def seen_before(
    bundle: Bundle, analysis: Analysis, reports: Path | None, *, exclude: Path | None = None
) -> tuple[SeenReport, ...]:
    """Earlier reports under `reports` (default `reports/`, skipped when absent) of this hang.

    `exclude` is the report being written; reports drafted from this bundle are this
    incident and never count.
    """
    from reporter.render import seen

    folder = reports if reports is not None else DEFAULT_REPORTS
    if not folder.is_dir():
        if reports is not None:
            raise UsageError(
                f"{reports}: no such folder", tip="pass the folder that holds earlier reports"
            )
        return ()
    records = []
    skip = str(exclude) if exclude is not None else ""
    for path in sorted(p for p in folder.rglob("*.md") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # `report lint` says why
        record = seen.read(text, path=str(path))
        if record is not None:
            records.append(record)
    return seen.matches(
        records,
        signature=analysis.signature.hash,
        signature_text=analysis.signature.text,
        bundle=bundle.root or "",
        exclude=skip,
    )


def analysis_text(bundle: Bundle, analysis: Analysis, *, seen: Sequence[SeenReport] = ()) -> str:
    """`report analyze` for a terminal: the summary block first, then the classes."""
    from reporter.render import answer

    ans = answer.build(bundle, analysis, seen=seen)
    lines = [
        ans.title,
        f"verdict: {ans.verdict_label} (confidence {analysis.confidence.value}, "
        f"{analysis.snapshots} snapshot{'s' if analysis.snapshots != 1 else ''})",
    ]
    for line in ans.lines:
        where = f"  [{', '.join(line.sources)}]" if line.sources else ""
        lines.append(f"  {line.topic.lower()}: {line.text}{where}")
    if ans.steps:
        lines.append("next steps:")
        lines.extend(f"  {n}. {step.action}" for n, step in enumerate(ans.steps[:4], start=1))
    lines.append("")
    lines.append(ans.paragraph)
    if analysis.classes:
        lines.append("")
    for inst in analysis.instances:
        lines.append(f"instance {inst.id}: {inst.verdict.value} ({inst.label})")
    for stack_class in analysis.classes:
        blocked = stack_class.collective or stack_class.wait or "-"
        top = innermost_python(stack_class.frames)
        where = (
            f"{top.function} ({top.file}:{top.line})"
            if top and top.line
            else (top.display() if top else "-")
        )
        label = (
            f"{stack_class.instance}:{stack_class.label}"
            if analysis.instances
            else stack_class.label
        )
        lines.append(f"  {label:<12} {stack_class.state.value:<8} {blocked:<16} {where}")
    for edge in analysis.waits_for:
        at = f" at {edge.waiting.at}" if edge.waiting.at else ""
        whom = edge.waited.at or edge.waited.state
        prefix = f"instance {edge.instance}: " if analysis.instances else ""
        lines.append(
            f"waits: {prefix}{format_ranks(edge.waiting.ranks)} in {edge.waiting.collective}{at}"
            f" -> {format_ranks(edge.waited.ranks)} {whom}"
        )
    for note in analysis.confidence_notes:
        lines.append(f"note: {note}")
    lines.append(f"signature: {analysis.signature.hash}")
    return "\n".join(lines)


def chart_path(report: Path) -> Path:
    """Where the metrics SVG of a report goes: `<report stem>.metrics.svg` beside it."""
    return report.with_name(f"{report.stem}.metrics.svg")


def render_charts_svg(bundle: Bundle, analysis: Analysis) -> str | None:
    """The metrics charts as one SVG document, or None when there is nothing to chart."""
    from reporter.render import charts

    built = charts.build(analysis.wedge)
    if not built:
        return None
    title = bundle.manifest.title or f"Metrics: {analysis.verdict.value}"
    window = charts.window_text(analysis.wedge) if analysis.wedge is not None else ""
    return charts.svg_document(built, title=title, window=window)


def default_report_path(bundle: Bundle, analysis: Analysis, *, now: datetime) -> Path:
    """`reports/<date>-<slug>.md`, the slug from the incident title or the verdict."""
    title = bundle.manifest.title or f"{analysis.verdict.value} {analysis.signature.hash}"
    return Path("reports") / f"{now:%Y-%m-%d}-{md.slug(title)}.md"


def draft(
    paths: Sequence[Path],
    *,
    out: Path | None,
    options: Options,
    force: bool = False,
    now: datetime | None = None,
    reports: Path | None = None,
) -> DraftResult:
    """Write the report; into an existing report, merge (see `reporter.render.regions.merge`).

    Regions nobody edited are regenerated, reviewers' edits and text stay byte for byte.
    With `force` the existing report is replaced instead. The previous file is kept as
    `<name>.bak`.
    """

    moment = now or now_utc()
    bundle, analysis = load_and_analyze(paths, options)
    target = out or default_report_path(bundle, analysis, now=moment)
    if target.is_dir():
        target = target / default_report_path(bundle, analysis, now=moment).name
    seen = seen_before(bundle, analysis, reports, exclude=target)
    # Evidence quoted in the report (raw dumps, log lines, locals) is masked like every
    # other output: the local report is shared too (reporter.secrets).
    text = mask_text(
        render_draft(bundle, analysis, now=moment, chart_file=chart_path(target).name, seen=seen)
    )
    svg = render_charts_svg(bundle, analysis)
    charts = chart_path(target) if svg is not None else None
    # Read, merge and write under the folder's lock: two drafts of one report serialise.
    with locked(target):
        return _draft_into(target, text, svg, charts, analysis, force=force)


def _draft_into(
    target: Path,
    text: str,
    svg: str | None,
    charts: Path | None,
    analysis: Analysis,
    *,
    force: bool,
) -> DraftResult:
    """Merge `text` into the report at `target` (or write it), keeping a backup."""
    from reporter.render import regions

    merged: regions.MergeResult | None = None
    if charts is not None:
        check_target(charts)
    if check_target(target):
        try:
            old = read_text_bounded(target, max_bytes=_REPORT_MAX_BYTES)
        except InputError as err:
            raise OutputError(
                f"{target}: exists and cannot be read ({err.message.removeprefix(f'{target}: ')})",
                tip="pass --out with another path, or --force to replace it (kept as .bak)",
            ) from err
        if not force:
            parsed = regions.parse(old)
            if not parsed.regions and parsed.known is None and not parsed.damage:
                raise OutputError(
                    f"{target}: exists and is not a reporter report (no generated regions); "
                    "not overwriting it",
                    tip="pass --out with another path, or --force to replace it (kept as .bak)",
                )
            merged = regions.merge(old, text)
            text = merged.text
        if old == text:
            if charts is not None and svg is not None:
                write_atomic(charts, svg)
            return DraftResult(
                path=target,
                backup=None,
                unchanged=True,
                analysis=analysis,
                merge=merged,
                charts=charts,
            )
    backup = write_atomic(target, text, backup=True)
    if charts is not None and svg is not None:
        write_atomic(charts, svg)
    return DraftResult(
        path=target,
        backup=backup,
        unchanged=False,
        analysis=analysis,
        merge=merged,
        charts=charts,
    )


def _raw_texts(bundle: Bundle) -> dict[str, str]:
    """The text of the evidence files the report embeds as they are (logs, failed dumps)."""
    from reporter.render.evidence import raw_paths

    out: dict[str, str] = {}
    for rel in raw_paths(bundle):
        path = Path(rel) if bundle.root is None else Path(bundle.root) / rel
        try:
            out[rel] = read_text_bounded(path, display=rel, errors="replace")
        except (InputError, OSError):
            continue  # named in the evidence index all the same
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class InitResult:
    """The manifest `report init` wrote and the guesses it put in as comments."""

    path: Path
    suggestions: tuple[Suggestion, ...] = ()


def init_manifest(folder: Path, *, force: bool = False) -> InitResult:
    """Write a commented `bundle.toml` listing the evidence found in `folder`.

    Guesses for the upstream repository, the world size and evidence globs go in as
    commented-out lines with the evidence behind each (see `reporter.guess`).
    """
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder", tip="pass the folder that holds the dumps")
    target = folder / MANIFEST_NAME
    if check_target(target) and not force:
        raise OutputError(
            f"{target}: already exists; not overwriting it",
            tip="edit it, or pass --force to replace it (the old one is kept as .bak)",
        )
    text = bundle_io.draft_manifest(folder)
    suggestions = _init_guesses(folder)
    write_atomic(target, _with_guesses(text, suggestions), backup=True)
    return InitResult(path=target, suggestions=suggestions)


def _init_guesses(folder: Path) -> tuple[Suggestion, ...]:
    """What the evidence in `folder` suggests; nothing when it cannot be read."""
    from reporter import guess
    from reporter.analysis.excerpts import default_upstream_rules

    try:
        bundle = bundle_io.load([folder])
        analysis = analyze(bundle)
    except InputError:
        return ()
    rules = [
        guess.Rule(module=r.module, dist=r.dist, repo=r.repo) for r in default_upstream_rules()
    ]
    ranks = [p.identity.rank for p in analysis.processes if p.identity.rank is not None]
    found = [
        guess.upstream(bundle, rules),
        guess.world_size(bundle, ranks),
        *guess.globs([(f.path, f.kind) for f in bundle.files]),
    ]
    return tuple(s for s in found if s is not None)


def _with_guesses(text: str, suggestions: Sequence[Suggestion]) -> str:
    """The manifest with the guesses as comments, each where its key goes (so uncommenting
    one never duplicates a key); globs at the end."""
    import re

    for s in suggestions:
        if s.key == "evidence":
            assert isinstance(s.value, list)
            text += (
                f"\n# Guessed by `report init`: one entry for {s.why}, instead of the per-file "
                f"entries above\n# [[evidence]]\n# path = {json.dumps(s.value[0])}\n"
                f"# kind = {json.dumps(s.value[1])}\n"
            )
            continue
        line = f"# {s.key} = {json.dumps(s.value)}  # guessed from {s.why}; uncomment if right"
        # The starter's own line for this key (`upstream = []`, `# world_size = 8`) makes way.
        pattern = re.compile(rf"^#? ?{re.escape(s.key)} = .*$", re.MULTILINE)
        if pattern.search(text):
            text = pattern.sub(line.replace("\\", "\\\\"), text, count=1)
        else:
            head, sep, rest = text.partition("\n\n")
            text = f"{head}{sep}{line}\n\n{rest}" if sep else f"{text}{line}\n"
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class LintRun:
    """The files `report lint` read and what it found, sorted by file and line."""

    files: tuple[Path, ...]
    findings: tuple[Finding, ...]


def _markdown_files(paths: Sequence[Path]) -> list[Path]:
    """The files named, with folders expanded to the Markdown files under them (sorted)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.md") if p.is_file()))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            check_regular(path)  # raises: a FIFO, device or socket is named as such
        else:
            raise UsageError(f"{path}: no such file or folder", tip="pass report files or folders")
    return list(dict.fromkeys(files))


def lint_reports(paths: Sequence[Path], *, index: Path | None = None) -> LintRun:
    """Lint report files (folders: every `*.md` under them); `index` checks issue links."""
    from reporter.render import lint

    files = _markdown_files(paths)
    if not files:
        raise UsageError("no Markdown files to lint", tip="pass report files or a reports/ folder")
    issue_index = lint.SqliteIssueIndex(index) if index is not None else None
    findings: list[Finding] = []
    try:
        for path in files:
            try:
                text = read_text_bounded(path, max_bytes=_REPORT_MAX_BYTES)
            except InputError as err:
                reason = err.message.removeprefix(f"{path}: ")
                findings.append(
                    lint.Finding(
                        path=str(path), line=1, rule=lint.Rule.UNREADABLE, message=str(reason)
                    )
                )
                continue
            findings.extend(lint.lint_text(text, path=str(path), index=issue_index))
    finally:
        if issue_index is not None:
            issue_index.close()
    return LintRun(files=tuple(files), findings=tuple(findings))


def lint_json(run: LintRun) -> str:
    """The `lint --json` document."""
    document = {
        "files": [str(p) for p in run.files],
        "findings": [f.to_json() for f in run.findings],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def report_status(folder: Path) -> tuple[ReportStatus, ...]:
    """A status row for every report (Markdown with reporter front matter) under `folder`."""
    from reporter.render import status

    if not folder.is_dir():
        raise UsageError(
            f"{folder}: no such folder",
            tip="pass the folder that holds the reports (default reports/)",
        )
    rows: list[ReportStatus] = []
    for path in sorted(p for p in folder.rglob("*.md") if p.is_file()):
        try:
            text = read_text_bounded(path, max_bytes=_REPORT_MAX_BYTES)
        except InputError:
            continue  # not a report we can read; `report lint` says why
        row = status.summarize(text, path=str(path))
        if row is not None:
            rows.append(row)
    return status.grouped(rows)


def status_text(rows: Sequence[ReportStatus]) -> str:
    """The `status` table for a terminal."""
    from reporter.render import status

    return status.table(rows)


def status_json(rows: Sequence[ReportStatus]) -> str:
    """The `status --json` document."""
    return json.dumps([r.to_json() for r in rows], indent=2, ensure_ascii=False) + "\n"


def preview(path: Path, *, out: Path | None = None, force: bool = False) -> Path:
    """Write a standalone HTML preview of a report; returns its path (default: FILE.html)."""
    from reporter.render import preview as html_preview

    if not path.exists():
        raise UsageError(f"{path}: no such file", tip="pass a report's Markdown file")
    text = read_text_bounded(path, max_bytes=_REPORT_MAX_BYTES)
    target = out or path.with_suffix(".html")
    if target.resolve() == path.resolve():
        raise UsageError(f"{target}: is the report itself", tip="pass --out with an .html path")
    write_atomic(
        target,
        html_preview.to_html(text, source=path.name),
        owned=None if force else (lambda head: html_preview.CSP in head),
    )
    return target


# --- settings: flags > environment > the config file ---------------------------------


def settings() -> Settings:
    """The user's config file (`reporter.config`), read once per command."""
    from reporter import config

    return config.load(os.environ)


def upstream_env(conf: Settings | None = None) -> dict[str, str]:
    """The environment the upstream code reads, with the config's host as a default."""
    from reporter import config

    return config.with_defaults(os.environ, conf or settings())


def default_db(db: Path | None, conf: Settings | None = None) -> Path | None:
    """`--db`, else the config's `index`, else None (the user cache dir's index)."""
    return db or (conf or settings()).index


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthStatus:
    """`report auth status`: the host, where its token came from, and the limit left."""

    host: str
    api_url: str
    token_source: str | None
    rate_limit: RateLimit | None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """The `auth status --json` document (never the token)."""
        limit = self.rate_limit
        return {
            "host": self.host,
            "api_url": self.api_url,
            "authenticated": self.token_source is not None,
            "token_source": self.token_source,
            "rate_limit": None
            if limit is None
            else {"limit": limit.limit, "remaining": limit.remaining, "reset": limit.reset},
            "error": self.error,
        }


def auth_status(*, base_url: str | None = None, check: bool = True) -> AuthStatus:
    """Which GitHub host the upstream commands use, its token's source and the limit left.

    With `check`, asks `GET /rate_limit` (free); a failure is reported, not raised.
    """
    from reporter.errors import UpstreamError
    from reporter.upstream.auth import api_url, find_token, host_of
    from reporter.upstream.github import GitHubClient, RetryPolicy

    env = upstream_env()
    url = api_url(env, base_url)
    token = find_token(env, base_url=url)
    limit = None
    error = None
    if check:
        try:
            with GitHubClient(
                base_url=url, token=token, timeout=10.0, retry=RetryPolicy(attempts=2)
            ) as client:
                limit = client.rate_limit()
        except UpstreamError as err:
            error = err.message
    return AuthStatus(
        host=host_of(url),
        api_url=url,
        token_source=token.source if token else None,
        rate_limit=limit,
        error=error,
    )


def auth_status_text(status: AuthStatus, *, now: float | None = None) -> str:
    """`report auth status` for a terminal."""
    import time

    lines = [f"{status.host} ({status.api_url})"]
    if status.token_source:
        lines.append(f"  token: from {status.token_source}")
    else:
        from reporter.upstream.auth import missing_token_tip

        lines.append(f"  token: none ({missing_token_tip(status.host)})")
    if status.rate_limit is not None:
        limit = status.rate_limit
        minutes = max(0, round((limit.reset - (now or time.time())) / 60))
        lines.append(
            f"  rate limit: {limit.remaining} of {limit.limit} requests left "
            f"(resets in {minutes} min)"
        )
    if status.error:
        lines.append(f"  rate limit: not checked: {status.error}")
    return "\n".join(lines)


def config_show_text(conf: Settings) -> str:
    """`report config show` for a terminal: the path, then each key."""
    from reporter.config import KEYS

    where = f"{conf.path}" + ("" if conf.exists else " (not created; every key unset)")
    lines = [f"config file: {where}"]
    values = conf.to_json()["settings"]
    assert isinstance(values, dict)
    for key in KEYS:
        value = values[key]
        shown = json.dumps(value) if value not in (None, []) else "(unset)"
        lines.append(f"  {key} = {shown}")
    return "\n".join(lines)


# --- upstream issues: `report sync`, `report index ...`, `report search-upstream` -------
# The work happens in reporter.upstream.search; these wrappers build the query from the
# evidence and keep the upstream modules (httpx, sqlite) out of other commands' start-up.


def upstream_query(
    evidence: Path | None,
    *,
    repos: Sequence[str],
    text_file: Path | None,
    options: Options | None = None,
) -> UpstreamQuery:
    """The search query from a bundle (its analysis), a text file (`-`: stdin), or both."""
    import sys

    from reporter.upstream.index import validate_repo
    from reporter.upstream.query import query_from_analysis, query_from_text

    names = tuple(validate_repo(r) for r in repos)
    text: str | None = None
    if text_file is not None:
        try:
            text = (
                sys.stdin.read(_REPORT_MAX_BYTES)
                if str(text_file) == "-"
                else read_text_bounded(text_file, max_bytes=_REPORT_MAX_BYTES)
            )
        except InputError as err:
            raise UsageError(err.message, tip="pass a UTF-8 text file") from err
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(
                f"{text_file}: cannot read it ({err})", tip="pass a UTF-8 text file"
            ) from err
    if evidence is None:
        if text is None:
            raise UsageError(
                "nothing to search for",
                tip="pass a BUNDLE, or --text-file with an issue draft or a dump",
            )
        return query_from_text(text, repos=names)
    bundle, analysis = load_and_analyze([evidence], options or Options())
    query = query_from_analysis(bundle, analysis, repos=names)
    if text is None:
        return query
    extra = query_from_text(text)
    from dataclasses import replace

    return replace(
        query,
        text=f"{query.text}\n{extra.text}",
        stacks=query.stacks + extra.stacks,
        errors=tuple(dict.fromkeys(query.errors + extra.errors)),
    )


def search_upstream(
    evidence: Path | None,
    *,
    repos: Sequence[str] = (),
    text_file: Path | None = None,
    limit: int = 10,
    online: bool | None = None,
    db: Path | None = None,
) -> SearchOutcome:
    """`report search-upstream`: ranked upstream issues like the bundle's hang, the text,
    or a stored issue given as `owner/repo#N` in place of the bundle."""
    from reporter.upstream import search
    from reporter.upstream.query import Query
    from reporter.upstream.triage import parse_issue_ref

    conf = settings()
    ref = None if evidence is None or evidence.exists() else parse_issue_ref(str(evidence))
    if ref is not None:
        from reporter.upstream.index import validate_repo

        names = tuple(validate_repo(r) for r in repos)
        query = Query(repos=names, title="", text="")
        return search.run_search(
            query,
            db=default_db(db, conf),
            online=online,
            limit=limit,
            env=upstream_env(conf),
            issue=ref,
        )
    query = upstream_query(evidence, repos=repos, text_file=text_file)
    if not query.repos and conf.repos:
        from dataclasses import replace

        query = replace(query, repos=conf.repos)
    return search.run_search(
        query, db=default_db(db, conf), online=online, limit=limit, env=upstream_env(conf)
    )


def triage(
    target: str,
    *,
    since: str | None = None,
    text_file: Path | None = None,
    limit: int = 5,
    db: Path | None = None,
    comment: bool = False,
    post: bool = False,
) -> TriageOutcome:
    """`report triage`: likely duplicates of tracker issues (see `upstream.triage`)."""
    import sys

    from reporter.upstream.triage import run_triage

    text: str | None = None
    if text_file is not None:
        try:
            text = sys.stdin.read() if str(text_file) == "-" else text_file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(
                f"{text_file}: cannot read it ({err})", tip="pass a UTF-8 text file"
            ) from err
    conf = settings()
    return run_triage(
        target,
        since=since,
        text=text,
        limit=limit,
        db=default_db(db, conf),
        comment=comment,
        post=post,
        env=upstream_env(conf),
    )


def search_upstream_json(outcome: SearchOutcome) -> str:
    """The `search-upstream --json` document."""
    from reporter.upstream import search

    return json.dumps(search.outcome_json(outcome), indent=2, ensure_ascii=False) + "\n"


def search_upstream_text(outcome: SearchOutcome) -> str:
    """The `search-upstream` listing for a terminal."""
    from reporter.upstream import search

    return search.format_table(outcome)


def triage_text(outcome: TriageOutcome, *, as_json: bool) -> str:
    """The `report triage` table: Markdown, or the JSON document."""
    from reporter.upstream import triage

    if as_json:
        return triage.rows_json(outcome.rows, outcome.notes)
    return triage.markdown_table(outcome.rows)


def sync_upstream(
    repos: Sequence[str],
    *,
    db: Path | None = None,
    full: bool = False,
    progress: Callable[[SyncProgress], None] | None = None,
    fixed_in: bool = True,
) -> tuple[list[SyncReport], list[str], Path]:
    """`report sync`: bring the local index of each repo up to date (and what fixed its
    closed issues, with `fixed_in`)."""
    from reporter.upstream import search

    conf = settings()
    names = list(repos) or list(conf.repos)
    if not names:
        raise UsageError(
            "no repository to sync", tip="pass OWNER/NAME, or set `repos` in `report config show`"
        )
    return search.run_sync(
        names,
        db=default_db(db, conf),
        full=full,
        env=upstream_env(conf),
        progress=progress,
        fixed_in=fixed_in,
    )


def index_import(file: Path, *, db: Path | None = None) -> tuple[ImportResult, Path]:
    """`report index import`: JSONL issues into the index (default: the user cache index)."""
    from reporter.upstream import search
    from reporter.upstream.index import Index

    path = default_db(db) or search.default_db_path()
    with Index(path) as index:
        return search.import_file(index, file), path


def index_export(
    *, write: Callable[[str], object], db: Path | None = None, repo: str | None = None
) -> tuple[int, Path]:
    """`report index export`: hand each stored issue's JSONL line to `write`; the count."""
    from reporter.upstream import search
    from reporter.upstream.index import Index, validate_repo

    name = validate_repo(repo) if repo else None
    count = 0
    path = default_db(db) or search.default_db_path()
    with Index(path, create=False) as index:
        for line in search.export_lines(index, name):
            write(line)
            count += 1
    return count, path


# --- report collect --------------------------------------------------------------------


def collect(
    request: CollectRequest,
    *,
    progress: Callable[[str], None],
    tick: Callable[[str, int, int], None] | None = None,
) -> CollectSummary:
    """`report collect`: gather live evidence into a new bundle folder.

    The first Ctrl-C asks the collection to stop at the next step boundary and to
    leave a valid partial bundle; a second one interrupts at once (the manifest
    written after the last finished step still stands).
    """
    import signal
    import threading

    from reporter.collect import collect as run_collect

    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return run_collect(request, progress=progress, stop=stop, tick=tick)

    def first_interrupt(signum: int, frame: object) -> None:
        stop.set()
        progress("stopping: finishing the current step (Ctrl-C again to abort at once)")
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first_interrupt)
    try:
        return run_collect(request, progress=progress, stop=stop, tick=tick)
    finally:
        signal.signal(signal.SIGINT, previous)


# --- upstream drafts and filing: `report upstream draft`, `report upstream file` ---------
# The work happens in reporter.upstream.publish; these wrappers resolve the repository and
# the paths, and keep PyGithub and httpx out of other commands' start-up.


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamDraftRun:
    """Where `report upstream draft` wrote the draft, and what it made."""

    path: Path
    backup: Path | None
    run: DraftRun


def upstream_repo(bundle: Bundle, repo: str | None, conf: Settings | None = None) -> str:
    """`--repo`, else the manifest's first `upstream` repository, else the config's first."""
    from reporter.upstream.index import validate_repo

    if repo:
        return validate_repo(repo)
    if bundle.manifest.upstream:
        return validate_repo(bundle.manifest.upstream[0])
    if conf is not None and conf.repos:
        return validate_repo(conf.repos[0])
    raise UsageError(
        "no upstream repository to draft for",
        tip="pass --repo OWNER/NAME, or set `upstream = [...]` in bundle.toml",
    )


def default_upstream_path(bundle: Bundle, analysis: Analysis, repo: str, *, now: datetime) -> Path:
    """`reports/<date>-<slug>.upstream-<owner>-<name>.md`, beside the incident report."""
    report = default_report_path(bundle, analysis, now=now)
    return report.with_name(f"{report.stem}.upstream-{md.slug(repo)}.md")


def upstream_draft(
    evidence: Path,
    *,
    repo: str | None = None,
    out: Path | None = None,
    forms: Path | None = None,
    offline: bool = False,
    db: Path | None = None,
    link_related: bool = False,
    base_url: str | None = None,
    options: Options | None = None,
    now: datetime | None = None,
    force: bool = False,
) -> UpstreamDraftRun:
    """Write the upstream issue draft for review (front matter `kind: upstream-draft`).

    Works with no network and no token: forms fall back to the cache or the generic form,
    related issues to the local index. An existing file is kept as `.bak`.
    """
    from reporter.upstream import publish

    conf = settings()
    bundle, analysis = load_and_analyze([evidence], options or Options())
    name = upstream_repo(bundle, repo, conf)
    run = publish.make_draft(
        bundle,
        analysis,
        name,
        forms_dir=forms or conf.forms,
        offline=offline,
        db=default_db(db, conf),
        link_related=link_related,
        base_url=base_url,
        env=upstream_env(conf),
    )
    target = out or default_upstream_path(bundle, analysis, name, now=now or now_utc())
    backup = write_atomic(
        target,
        run.draft.document,
        backup=True,
        owned=None if force else _is_upstream_draft,
    )
    return UpstreamDraftRun(path=target, backup=backup, run=run)


def _is_upstream_draft(head: str) -> bool:
    """True for a file `report upstream draft` wrote (front matter `kind: upstream-draft`)."""
    from reporter.render import frontmatter

    return f"kind: {frontmatter.UPSTREAM_DRAFT}" in head[:4096]


def upstream_file(
    evidence: Path,
    *,
    repo: str | None = None,
    yes: bool = False,
    force_new: bool = False,
    base_url: str | None = None,
    draft: Path | None = None,
    forms: Path | None = None,
    db: Path | None = None,
    link_related: bool = False,
    options: Options | None = None,
    reports: Path | None = None,
    report: Path | None = None,
) -> FileResult:
    """`report upstream file`: a dry run unless `yes`; see `reporter.upstream.publish`.

    Once filed (or commented), the issue's URL goes into the incident report's
    `upstream_issue` (`record_upstream_issue`).
    """
    from reporter.upstream import publish

    conf = settings()
    bundle, analysis = load_and_analyze([evidence], options or Options())
    result = publish.file_upstream(
        bundle,
        analysis,
        upstream_repo(bundle, repo, conf),
        yes=yes,
        force_new=force_new,
        base_url=base_url,
        draft_file=draft,
        forms_dir=forms or conf.forms,
        db=default_db(db, conf),
        link_related=link_related,
        env=upstream_env(conf),
    )
    already = (publish.Action.ALREADY_FILED, publish.Action.SKIP_COMMENT)
    if result.url and (result.sent or result.plan.action in already):
        from dataclasses import replace

        updated = record_upstream_issue(bundle, result.url, reports=reports, report=report)
        result = replace(result, reports_updated=updated)
    return result


def record_upstream_issue(
    bundle: Bundle, url: str, *, reports: Path | None = None, report: Path | None = None
) -> tuple[Path, ...]:
    """Write `url` into `upstream_issue` of the incident report(s) of this bundle.

    `report` names the report; otherwise every incident report under `reports` (default
    `reports/` when present) drafted from this bundle. A report whose `upstream_issue`
    already names another issue is left alone (the reviewer chose it).
    """
    from reporter.render import frontmatter, seen

    if report is not None:
        candidates = [report]
    else:
        folder = reports if reports is not None else DEFAULT_REPORTS
        candidates = []
        if folder.is_dir() and bundle.root:
            for path in sorted(p for p in folder.rglob("*.md") if p.is_file()):
                try:
                    record = seen.read(path.read_text(encoding="utf-8"), path=str(path))
                except (OSError, UnicodeDecodeError):
                    continue
                if record is not None and record.bundle == bundle.root:
                    candidates.append(path)
    updated: list[Path] = []
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise OutputError(f"{path}: cannot read the report to record {url} ({err})") from err
        front = frontmatter.parse(text)
        current = front.data.get("upstream_issue") if front and front.data else None
        if current not in (None, "", url):
            continue
        new = frontmatter.set_value(text, "upstream_issue", url)
        if new is not None and new != text:
            write_atomic(path, new)
            updated.append(path)
    return tuple(updated)


def upstream_file_text(result: FileResult, *, show_body: bool = False) -> str:
    """What `report upstream file` prints after the refusals (`refusal_lines`): the
    decision, its reasons and the request. The body is printed in a dry run that could be
    sent; when refused, only with `show_body` (the refusal is the news, not 25 KB of body)."""
    from reporter.upstream.publish import Action

    plan = result.plan
    lines: list[str] = []
    if result.sent:
        verb = "commented on" if plan.action is Action.COMMENT else "filed"
        lines.append(f"{verb}: {result.url}")
        if result.recorded is not None:
            lines.append(f"recorded in {result.recorded}")
        lines.extend(f"upstream_issue set in {path}" for path in result.reports_updated)
        return "\n".join(lines)
    lines.append(f"action: {plan.action.value}" + (f" ({plan.url})" if plan.url else ""))
    lines.extend(f"  why: {reason}" for reason in plan.reasons)
    request = plan.request
    if request is None:
        return "\n".join(lines)
    if plan.refusals:
        lines.append("nothing was sent; once fixed, --yes sends exactly this:")
    else:
        lines.append("dry run: nothing was sent; pass --yes to send exactly this:")
    lines.append(f"{request.method} {request.url}")
    if request.title is not None:
        lines.append(f"title: {request.title}")
        lines.append(f"labels: {', '.join(request.labels) if request.labels else '(none)'}")
    if show_body or not plan.refusals:
        lines.append(f"body ({len(request.body):,} characters) between the scissors lines:")
        lines.append("-------- 8< --------")
        lines.append(request.body.rstrip("\n"))
        lines.append("-------- >8 --------")
    else:
        lines.append(f"body: {len(request.body):,} characters (--show-body prints it)")
    if plan.redactions:
        total = sum(e.count for e in plan.redactions)
        lines.append(f"redacted before sending: {total} value(s); see the draft's front matter")
    return "\n".join(lines)


def refusal_lines(result: FileResult) -> list[str]:
    """Why filing was refused, one `refused:` line each, then what to do (a `Tip:`)."""
    plan = result.plan
    if result.sent or not plan.refusals:
        return []
    lines = [f"refused: {refusal}" for refusal in plan.refusals]
    if any("token" in r for r in plan.refusals):
        tip = "see `report auth status` for where a token is looked for"
    else:
        tip = "fix the draft (`report upstream draft`, then `report lint` it) and pass --draft FILE"
    lines.append(f"Tip: {tip}; --show-body prints what would be sent")
    return lines


def redaction_lines(entries: Sequence[RedactionEntry]) -> list[str]:
    """The redaction report for a terminal: one `kind in where: count` line per entry."""
    from reporter.upstream.redact import report_lines

    return report_lines(entries)
