"""Report use cases: analyze, draft, diff, init, lint, status, preview."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reporter.analysis import Analysis, Similarity, analyze
from reporter.analysis.excerpts import default_upstream_rules
from reporter.core import inert
from reporter.core.errors import InputError, OutputError, UsageError
from reporter.core.fileio import check_regular, markdown_files, read_text_bounded
from reporter.core.writer import check_target, locked, write_atomic
from reporter.load import bundle as bundle_io
from reporter.load.manifest import MANIFEST_NAME
from reporter.load.sources import SourceRoots, hash_tree
from reporter.model import Bundle
from reporter.render import answer
from reporter.render.answer import SeenBefore
from reporter.secrets import mask_text

if TYPE_CHECKING:
    from reporter.analysis.diff import EnvDiff
    from reporter.load.guess import Suggestion
    from reporter.load.sources import SourceRoots
    from reporter.render.answer import SeenBefore, SeenReport
    from reporter.render.charts import Chart
    from reporter.render.lint import Finding
    from reporter.render.regions import MergeResult
    from reporter.render.seen import ReportRecord
    from reporter.render.status import ReportStatus
    from reporter.render.view import ReportView


# The clock under its old name, for app/upstream.py until its use cases take a Context.
# Reports, drafts and query texts are Markdown a person edits: 64 MiB is far beyond any.
REPORT_MAX_BYTES = 64 * 1024 * 1024


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
        baseline = bundle_io.load_baseline(options.baseline, options.max_file_bytes)
        # Named on the command line: no note about how a baseline was found.
        bundle = replace(bundle, baseline=baseline, baseline_note="")
    return bundle, analyze(
        bundle,
        similarity=options.similarity,
        sources=_source_roots(bundle, options.source_roots),
        context=options.context,
    )


def _source_roots(bundle: Bundle, roots: Sequence[Path]) -> SourceRoots | None:
    """The `--source-root` folders, then the bundle's own `source_root`; None when neither."""
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
    # Lazy: start-up; `report analyze` must not load reporter.analysis.diff.
    from reporter.analysis.diff import diff_bundles

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


def render_draft(
    bundle: Bundle,
    analysis: Analysis,
    *,
    now: datetime,
    chart_file: str | None = None,
    seen: SeenBefore | Sequence[SeenReport] = (),
) -> str:
    """The Markdown report text for a loaded, analyzed bundle.

    `chart_file` is the name of the metrics SVG beside the report (default: the one
    beside the default report path); `seen` are earlier reports of the same or a
    similar hang (`seen_before`). Secrets are masked as `[redacted]` (`_report_text`).
    """
    return _report_text(_draft_view(bundle, analysis, now=now, chart_file=chart_file, seen=seen))


def _draft_view(
    bundle: Bundle,
    analysis: Analysis,
    *,
    now: datetime,
    chart_file: str | None,
    seen: SeenBefore | Sequence[SeenReport],
) -> ReportView:
    # Lazy: start-up; `report analyze` must not load reporter.analysis.diff.
    from reporter.render.view import build_view

    if chart_file is None:
        chart_file = chart_path(default_report_path(bundle, analysis, now=now)).name
    return build_view(
        bundle,
        analysis,
        chart_file=chart_file,
        answer=answer.build(bundle, analysis, seen=seen),
    )


def _report_text(view: ReportView) -> str:
    """The rendered report, masked and sealed: the one place a report's text is masked.

    Evidence quoted in the report (raw dumps, log lines, locals) is masked like every
    other local output (`[redacted]`, the mark the environment table's named values
    already carry): the local report is shared too. The mark scans clean, so `report
    lint` flags only what someone pastes in by hand.
    """
    # Lazy: start-up; `report analyze` must not load reporter.analysis.diff.
    from reporter.render import regions
    from reporter.render.render import render_report

    return regions.seal(mask_text(render_report(view)))


DEFAULT_REPORTS = Path("reports")


def seen_before(
    bundle: Bundle, analysis: Analysis, reports: Path | None, *, exclude: Path | None = None
) -> SeenBefore:
    """Earlier reports under `reports` (default `reports/`, skipped when absent) of this hang,
    with the folder looked through and how many reports it held.

    `exclude` is the report being written; reports drafted from this bundle (by its
    resolved folder or its evidence digest) are this incident and never count.
    """
    folder = reports if reports is not None else DEFAULT_REPORTS
    if not folder.is_dir():
        if reports is not None:
            raise UsageError(
                f"{reports}: no such folder", tip="pass the folder that holds earlier reports"
            )
        return SeenBefore()
    # Lazy: name; a function here binds `seen` to something else. Start-up too: without a
    # reports folder, `report analyze` never loads it (nor yaml).
    from reporter.render import seen

    skip = str(exclude) if exclude is not None else ""
    # Folders compare resolved: `./b`, `b/` and `/srv/b` name one bundle.
    records = [
        replace(record, bundle=_resolved(record.bundle)) for _, record in report_records(folder)
    ]
    found = seen.matches(
        records,
        signature=analysis.signature.hash,
        signature_text=analysis.signature.text,
        bundle=_resolved(bundle.root or ""),
        exclude=skip,
        digest=bundle.digest,
    )
    shown = str(folder).rstrip("/") + "/"
    comparable = bool(seen.shape(analysis.signature.text))
    return SeenBefore(matches=found, folder=shown, read=len(records), comparable=comparable)


def report_records(folder: Path) -> Iterator[tuple[Path, ReportRecord]]:
    """(path, record) of every incident report under `folder`, in path order. A file that
    cannot be read or is not an incident report is passed over (`report lint` says why)."""
    # Lazy: name; a function here binds `seen` to something else.
    from reporter.render import seen

    for path in markdown_files(folder):
        try:
            text = read_text_bounded(path, max_bytes=REPORT_MAX_BYTES)
            record = seen.read(text, path=str(path))
        except (InputError, ValueError, RecursionError):
            continue
        if record is not None:
            yield path, record


def _resolved(folder: str) -> str:
    """`folder` as an absolute path without links; as given when it cannot be resolved."""
    if not folder:
        return ""
    try:
        return str(Path(folder).resolve())
    except (OSError, RuntimeError):
        return folder


def chart_path(report: Path) -> Path:
    """Where the metrics SVG of a report goes: `<report stem>.metrics.svg` beside it."""
    return report.with_name(f"{report.stem}.metrics.svg")


def render_charts_svg(bundle: Bundle, analysis: Analysis, built: Sequence[Chart]) -> str | None:
    """The charts `built` for the report as one SVG document, or None when there are none."""
    # Lazy: name; a function here binds `charts` to something else.
    from reporter.render import charts

    if not built:
        return None
    title = bundle.manifest.title or f"Metrics: {analysis.verdict.value}"
    window = charts.window_text(analysis.wedge) if analysis.wedge is not None else ""
    return charts.svg_document(built, title=title, window=window)


def default_report_path(bundle: Bundle, analysis: Analysis, *, now: datetime) -> Path:
    """`reports/<date>-<slug>.md`, the slug from the incident title or the verdict."""
    # Lazy: start-up; `report analyze` must not load reporter.render.markdown.
    from reporter.render import markdown as md

    title = bundle.manifest.title or f"{analysis.verdict.value} {analysis.signature.hash}"
    return Path("reports") / f"{now:%Y-%m-%d}-{md.slug(title)}.md"


def draft(
    paths: Sequence[Path],
    *,
    out: Path | None,
    options: Options,
    now: datetime,
    force: bool = False,
    reports: Path | None = None,
) -> DraftResult:
    """Write the report; into an existing report, merge (see `reporter.render.regions.merge`).

    Regions nobody edited are regenerated, reviewers' edits and text stay byte for byte.
    With `force` the existing report is replaced instead. The previous file is kept as
    `<name>.bak`. `now` (the context's clock) dates the default file name.
    """
    moment = now
    bundle, analysis = load_and_analyze(paths, options)
    target = out or default_report_path(bundle, analysis, now=moment)
    if target.is_dir():
        target = target / default_report_path(bundle, analysis, now=moment).name
    seen = seen_before(bundle, analysis, reports, exclude=target)
    view = _draft_view(bundle, analysis, now=moment, chart_file=chart_path(target).name, seen=seen)
    # Masked once, in `_report_text` (`[redacted]`), and made inert
    # like terminal output: `cat` of the report never runs an escape sequence (an OSC 52
    # clipboard write) or reorders text (a bidi override).
    text = inert.for_document(_report_text(view))
    # The SVG is drawn from the charts the report's Mermaid blocks were made from.
    svg = render_charts_svg(bundle, analysis, view.metrics.drawn if view.metrics else ())
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
    # Lazy: start-up; `report analyze` must not load reporter.render.regions.
    from reporter.render import regions

    merged: regions.MergeResult | None = None
    unchanged = False
    if charts is not None:
        check_target(charts)
    if check_target(target):
        try:
            old = read_text_bounded(target, max_bytes=REPORT_MAX_BYTES)
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
        unchanged = old == text
    # An unchanged report is not rewritten (no backup); its charts are, being derived.
    backup = None if unchanged else write_atomic(target, text, backup=True)
    if charts is not None and svg is not None:
        write_atomic(charts, svg)
    return DraftResult(
        path=target,
        backup=backup,
        unchanged=unchanged,
        analysis=analysis,
        merge=merged,
        charts=charts,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class InitResult:
    """The manifest `report init` wrote and the guesses it put in as comments."""

    path: Path
    suggestions: tuple[Suggestion, ...] = ()


def init_manifest(folder: Path, *, force: bool = False) -> InitResult:
    """Write a commented `bundle.toml` listing the evidence found in `folder`.

    Guesses for the upstream repository, the world size and evidence globs go in as
    commented-out lines with the evidence behind each (see `reporter.load.guess`).
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
    # Lazy: start-up; `report analyze` must not load reporter.load.guess.
    from reporter.load import guess

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
            files.extend(markdown_files(path))
        elif path.is_file():
            files.append(path)
        elif path.exists():
            check_regular(path)  # raises: a FIFO, device or socket is named as such
        else:
            raise UsageError(f"{path}: no such file or folder", tip="pass report files or folders")
    return list(dict.fromkeys(files))


def _upstream_scan(text: str) -> list[tuple[int, str, str]]:
    """The filing gate's scan of an upstream draft, for lint (see `redact.scan_document`)."""
    # Lazy: start-up; `report analyze` must not load reporter.upstream.
    from reporter.upstream.redact import scan_document

    return [(leak.line, leak.kind, leak.sample) for leak in scan_document(text)]


def lint_reports(paths: Sequence[Path], *, index: Path | None = None) -> LintRun:
    """Lint report files (folders: every `*.md` under them); `index` checks issue links."""
    files = _markdown_files(paths)
    if not files:
        raise UsageError("no Markdown files to lint", tip="pass report files or a reports/ folder")
    # Lazy: start-up; `report analyze` must not load reporter.render.lint (markdown-it).
    from reporter.render import lint

    issue_index = lint.SqliteIssueIndex(index) if index is not None else None
    findings: list[Finding] = []
    try:
        for path in files:
            try:
                text = read_text_bounded(path, max_bytes=REPORT_MAX_BYTES)
            except InputError as err:
                reason = err.message.removeprefix(f"{path}: ")
                findings.append(
                    lint.Finding(
                        path=str(path), line=1, rule=lint.Rule.UNREADABLE, message=str(reason)
                    )
                )
                continue
            try:
                findings.extend(
                    lint.lint_text(
                        text, path=str(path), index=issue_index, upstream_scan=_upstream_scan
                    )
                )
            except (ValueError, RecursionError, MemoryError) as err:
                # One report the checks cannot take never stops them on the others.
                findings.append(
                    lint.Finding(
                        path=str(path),
                        line=1,
                        rule=lint.Rule.UNREADABLE,
                        message=f"not checked: {type(err).__name__}: {str(err)[:200]}",
                    )
                )
    finally:
        if issue_index is not None:
            issue_index.close()
    return LintRun(files=tuple(files), findings=tuple(findings))


def report_status(folder: Path) -> tuple[ReportStatus, ...]:
    """A status row for every report (Markdown with reporter front matter) under `folder`."""
    # Lazy: start-up; `report analyze` must not load reporter.render.status (markdown-it).
    from reporter.render import status

    if not folder.is_dir():
        raise UsageError(
            f"{folder}: no such folder",
            tip="pass the folder that holds the reports (default reports/)",
        )
    rows: list[ReportStatus] = []
    for path in markdown_files(folder):
        try:
            text = read_text_bounded(path, max_bytes=REPORT_MAX_BYTES)
            row = status.summarize(text, path=str(path))
        except InputError:
            continue  # not a report we can read; `report lint` says why
        except (ValueError, RecursionError, MemoryError) as err:
            # One report that cannot be summarised never hides the others.
            row = status.unreadable(path=str(path), why=f"{type(err).__name__}: {err}")
        if row is not None:
            rows.append(row)
    return status.grouped(rows)


def preview(path: Path, *, out: Path | None = None, force: bool = False) -> Path:
    """Write a standalone HTML preview of a report; returns its path (default: FILE.html)."""
    # Lazy: start-up; `report analyze` must not load reporter.render.preview (markdown-it).
    from reporter.render import preview as html_preview

    if not path.exists():
        raise UsageError(f"{path}: no such file", tip="pass a report's Markdown file")
    text = read_text_bounded(path, max_bytes=REPORT_MAX_BYTES)
    target = out or path.with_suffix(".html")
    if target.resolve() == path.resolve():
        raise UsageError(f"{target}: is the report itself", tip="pass --out with an .html path")
    write_atomic(
        target,
        html_preview.to_html(text, source=path.name),
        owned=None if force else (lambda head: html_preview.CSP in head),
    )
    return target
