"""Use cases behind the CLI: analyze evidence, draft a report, write a starter manifest.

Each function takes paths and options, calls the loader, analysis and renderer,
and returns a result object; printing is the CLI's job.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reporter import bundle as bundle_io
from reporter.analysis import Analysis, Similarity, analyze, to_json
from reporter.errors import InputError, OutputError, UsageError
from reporter.model import Bundle
from reporter.render import markdown as md
from reporter.writer import write_atomic

if TYPE_CHECKING:
    from reporter.render.lint import Finding
    from reporter.render.regions import MergeResult
    from reporter.render.status import ReportStatus
    from reporter.render.view import Excerpt

# Lines of one evidence file embedded in a report; the bundle keeps the rest.
MAX_EXCERPT_LINES = 1500


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """Knobs shared by the commands that read evidence."""

    similarity: Similarity = Similarity.LINES_IGNORED
    max_file_bytes: int = bundle_io.DEFAULT_MAX_FILE_BYTES
    strict: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftResult:
    """Where a draft went, and whether an older file was kept as a backup."""

    path: Path
    backup: Path | None
    unchanged: bool
    analysis: Analysis
    merge: MergeResult | None = None
    """What happened to each region, when the draft was merged into an existing report."""


def now_utc() -> datetime:
    """The clock: `SOURCE_DATE_EPOCH` when set (reproducible output), else the real time."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC)
    return datetime.now(tz=UTC)


def load_and_analyze(paths: Sequence[Path], options: Options) -> tuple[Bundle, Analysis]:
    """Load the evidence and analyze it; `strict` turns parser warnings into an error."""
    bundle = bundle_io.load(paths, max_file_bytes=options.max_file_bytes)
    if options.strict and bundle.warnings:
        first = bundle.warnings[0]
        more = f" (and {len(bundle.warnings) - 1} more)" if len(bundle.warnings) > 1 else ""
        raise InputError(
            f"{first}{more}", tip="fix or recapture the evidence, or drop --strict to read past it"
        )
    return bundle, analyze(bundle, similarity=options.similarity)


def analysis_json(analysis: Analysis) -> str:
    """The `analyze --json` document, byte-stable for the same evidence.

    One top-level key per line and one list item per line: readable, and written by
    the C encoder (`indent=` switches json to its pure-Python encoder, five times
    slower on a 4,096-rank bundle).
    """
    return _json_lines(to_json(analysis))


def _json_lines(data: dict[str, object]) -> str:
    def dump(value: object) -> str:
        return json.dumps(value, ensure_ascii=False)

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


def render_draft(bundle: Bundle, analysis: Analysis, *, now: datetime) -> str:
    """The Markdown report text for a loaded, analyzed bundle."""
    # Imported here: Jinja costs `report analyze` start-up time it never uses.
    from reporter.render import regions
    from reporter.render.render import render_report
    from reporter.render.view import build_view

    excerpts, note = _excerpts(bundle, analysis)
    view = build_view(bundle, analysis, excerpts=excerpts, now=now, evidence_note=note)
    return regions.seal(render_report(view))


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
) -> DraftResult:
    """Write the report; into an existing report, merge (see `reporter.render.regions.merge`).

    Regions nobody edited are regenerated, reviewers' edits and text stay byte for byte.
    With `force` the existing report is replaced instead. The previous file is kept as
    `<name>.bak`.
    """
    from reporter.render import regions

    moment = now or now_utc()
    bundle, analysis = load_and_analyze(paths, options)
    text = render_draft(bundle, analysis, now=moment)
    target = out or default_report_path(bundle, analysis, now=moment)
    if target.is_dir():
        target = target / default_report_path(bundle, analysis, now=moment).name
    merged: regions.MergeResult | None = None
    if target.exists():
        try:
            old = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise OutputError(f"{target}: exists and cannot be read ({err})") from err
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
            return DraftResult(
                path=target, backup=None, unchanged=True, analysis=analysis, merge=merged
            )
    backup = write_atomic(target, text, backup=True)
    return DraftResult(path=target, backup=backup, unchanged=False, analysis=analysis, merge=merged)


def _excerpts(bundle: Bundle, analysis: Analysis) -> tuple[list[Excerpt], str]:
    """Raw evidence to embed: every file for small bundles, else the files behind each class."""
    from reporter.render.view import MAX_EMBEDDED_DUMPS, Excerpt

    if bundle.root is None:
        roots = {f.path: Path(f.path) for f in bundle.files}
    else:
        roots = {f.path: Path(bundle.root) / f.path for f in bundle.files}
    chosen = [f.path for f in bundle.files]
    note = ""
    if len(chosen) > MAX_EMBEDDED_DUMPS:
        wanted: dict[str, None] = {}
        by_pid = {p.identity.pid: p for p in analysis.processes}
        for stack_class in analysis.classes:
            process = by_pid.get(stack_class.pids[0]) if stack_class.pids else None
            if process and process.snapshots:
                wanted.setdefault(process.snapshots[-1].source.path, None)
        for failed in analysis.failed:
            wanted.setdefault(failed.failure.source.path, None)
        chosen = list(wanted)[:MAX_EMBEDDED_DUMPS]
        note = (
            f"{len(bundle.files)} evidence files; shown here: the {len(chosen)} that hold each "
            "class's representative dump and any failed dump. The bundle keeps them all."
        )
    excerpts: list[Excerpt] = []
    for rel in chosen:
        try:
            text = roots[rel].read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = text.splitlines()
        cut = ""
        if len(lines) > MAX_EXCERPT_LINES:
            cut = f"\n… {len(lines) - MAX_EXCERPT_LINES} more lines in {rel}"
            lines = lines[:MAX_EXCERPT_LINES]
        kind = next(f.kind.value for f in bundle.files if f.path == rel)
        excerpts.append(Excerpt(title=f"{rel} ({kind})", text="\n".join(lines) + cut))
    return excerpts, note


def init_manifest(folder: Path, *, force: bool = False) -> Path:
    """Write a commented `bundle.toml` listing the evidence found in `folder`."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder", tip="pass the folder that holds the dumps")
    target = folder / bundle_io.MANIFEST_NAME
    if target.exists() and not force:
        raise OutputError(
            f"{target}: already exists; not overwriting it",
            tip="edit it, or pass --force to replace it (the old one is kept as .bak)",
        )
    write_atomic(target, bundle_io.draft_manifest(folder), backup=True)
    return target


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
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
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
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # not a report we can read; `report lint` says why
        row = status.summarize(text, path=str(path))
        if row is not None:
            rows.append(row)
    return tuple(rows)


def status_text(rows: Sequence[ReportStatus]) -> str:
    """The `status` table for a terminal."""
    from reporter.render import status

    return status.table(rows)


def status_json(rows: Sequence[ReportStatus]) -> str:
    """The `status --json` document."""
    return json.dumps([r.to_json() for r in rows], indent=2, ensure_ascii=False) + "\n"


def preview(path: Path, *, out: Path | None = None) -> Path:
    """Write a standalone HTML preview of a report; returns its path (default: FILE.html)."""
    from reporter.render import preview as html_preview

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise UsageError(f"{path}: no such file", tip="pass a report's Markdown file") from err
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot be read as UTF-8 text ({err})") from err
    target = out or path.with_suffix(".html")
    if target.resolve() == path.resolve():
        raise UsageError(f"{target}: is the report itself", tip="pass --out with an .html path")
    write_atomic(target, html_preview.to_html(text, source=path.name))
    return target
