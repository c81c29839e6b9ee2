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
    """The `analyze --json` document, byte-stable for the same evidence."""
    return json.dumps(to_json(analysis), indent=2, ensure_ascii=False) + "\n"


def render_draft(bundle: Bundle, analysis: Analysis, *, now: datetime) -> str:
    """The Markdown report text for a loaded, analyzed bundle."""
    # Imported here: Jinja costs `report analyze` start-up time it never uses.
    from reporter.render.render import render_report, stamp
    from reporter.render.view import build_view

    excerpts, note = _excerpts(bundle, analysis)
    view = build_view(bundle, analysis, excerpts=excerpts, now=now, evidence_note=note)
    return stamp(render_report(view))


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
    """Write the report. An existing report is replaced only if nobody edited it, or with `force`.

    The replaced file is kept as `<name>.bak`.
    """
    moment = now or now_utc()
    bundle, analysis = load_and_analyze(paths, options)
    text = render_draft(bundle, analysis, now=moment)
    target = out or default_report_path(bundle, analysis, now=moment)
    if target.is_dir():
        target = target / default_report_path(bundle, analysis, now=moment).name
    if target.exists():
        try:
            old = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise OutputError(f"{target}: exists and cannot be read ({err})") from err
        if old == text:
            return DraftResult(path=target, backup=None, unchanged=True, analysis=analysis)
        # An unedited earlier draft may be replaced; a reviewer's edits never silently.
        if not force and not _is_unedited(old):
            raise OutputError(
                f"{target}: has edits that are not in the new draft; not overwriting it",
                tip="pass --out with another path, or --force to replace it (the old file is kept as .bak)",
            )
    backup = write_atomic(target, text, backup=True)
    return DraftResult(path=target, backup=backup, unchanged=False, analysis=analysis)


def _is_unedited(text: str) -> bool:
    from reporter.render.render import is_unedited

    return is_unedited(text)


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
        for failure in analysis.failed:
            wanted.setdefault(failure.source.path, None)
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
