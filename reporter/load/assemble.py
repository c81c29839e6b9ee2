"""Assemble one `Bundle` from manifest entries: read, sniff and parse each file, then fold
the files into the bundle's fields (`reporter.evidence.kinds.fold`, one merge per field:
no kind is named here). Used by `reporter.load.bundle`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial

from reporter.core import fileio
from reporter.core.errors import EvidenceError
from reporter.evidence import kinds
from reporter.evidence import sniff as sniffing
from reporter.evidence.kinds.fold import Parsed, fold
from reporter.evidence.kinds.interface import FileFacts, Read
from reporter.load import files
from reporter.load.manifest import ManifestEntry
from reporter.model import (
    CONTEXT_KINDS,
    DUMP_KINDS,
    HEAD_LINES,
    METRIC_KINDS,
    PROC_KINDS,
    SUMMARISED_KINDS,
    Bundle,
    EvidenceFile,
    EvidenceKind,
    Location,
    Manifest,
    ParseResult,
    ParseWarning,
    RankHint,
)

_NO_FACTS = FileFacts()


def assemble(
    root: str | None,
    manifest: Manifest,
    entries: Sequence[ManifestEntry],
    warnings: tuple[ParseWarning, ...],
    *,
    max_file_bytes: int,
    strict: bool,
    listed: int | None = None,
) -> Bundle:
    """Read, sniff and parse every entry, then fold the files into one bundle
    (`reporter.evidence.kinds.fold`: one merge per `Evidence` field, no kind named here).

    Files the user named (loose files, manifest entries) must be usable; files only
    found by walking the folder may be skipped with a warning.
    """
    records: list[EvidenceFile] = []
    all_warnings = list(warnings)
    hints: list[tuple[str, RankHint]] = []
    # Manifest events first: the timeline's sort keeps them ahead of a file's at one moment.
    parsed = [Parsed(ParseResult(events=manifest.events), FileFacts(), lambda: ())]
    # Dates a scrape or log that has no time of its own: the earliest manifest time.
    reference = min((e.captured_at for e in entries if e.captured_at), default=None)
    for index, entry in enumerate(entries):
        named = strict or (listed is not None and index < listed)
        read = _parse_entry(entry, named, reference, all_warnings, max_file_bytes)
        if read is None:
            continue
        result, record = read
        snapshot = snapshot_index(entry.display)
        facts = (
            _NO_FACTS  # frozen, so one serves every file that says nothing more
            if entry.captured_at is None and not entry.host and snapshot is None
            else FileFacts(captured_at=entry.captured_at, host=entry.host, snapshot=snapshot)
        )
        parsed.append(Parsed(result, facts, partial(_order, entry, index)))
        all_warnings.extend(result.warnings)
        if entry.hint is not None:
            hints.append((entry.display, entry.hint))
        records.append(record)
    folded, finish_warnings = fold(parsed)
    all_warnings.extend(finish_warnings)
    if not any(folded.values()):
        raise _no_evidence(root, entries, all_warnings)
    return Bundle(
        root=root,
        manifest=manifest,
        files=tuple(records),
        warnings=tuple(all_warnings),
        rank_hints=tuple(hints),
        **folded,
    )


def _parse_entry(
    entry: ManifestEntry,
    named: bool,
    reference: datetime | None,
    warnings: list[ParseWarning],
    max_file_bytes: int,
) -> tuple[ParseResult, EvidenceFile] | None:
    """One entry read, sniffed and parsed: its parse and file record; None when it is
    skipped (a warning says why). A named file that is not usable evidence raises."""
    data = files.read_once(entry, max_file_bytes=max_file_bytes)
    binary = files.read_binary(entry, max_file_bytes=max_file_bytes, data=data)
    if binary is not None:
        kind, result, size, digest = binary
        return result, _file_record(entry, kind, size, digest)
    try:
        text, size, digest = (
            files.read_evidence(entry.path, display=entry.display, max_file_bytes=max_file_bytes)
            if data is None
            else files.evidence_text(data, display=entry.display)
        )
        data = None  # not held beside the text while it is parsed (a file may be 512 MiB)
    except EvidenceError as err:
        # Metric, service and log files are never fatal: their problems are warnings.
        if named and entry.kind not in CONTEXT_KINDS:
            raise
        warnings.append(
            ParseWarning(source=Location(path=entry.display), message=f"skipped: {err.message}")
        )
        return None
    if entry.kind is None and files.own_output(text):
        if named:
            raise EvidenceError(
                f"{entry.display}: a report written by reporter, not evidence "
                "(its embedded dumps would count twice)",
                tip="pass the bundle folder or the dump files the report was drafted from",
            )
        # A report this tool wrote, saved inside the bundle: never evidence, and not
        # "unlisted evidence" either.
        warnings[:] = [w for w in warnings if w.source.path != entry.display]
        return None
    kind = entry.kind or sniffing.sniff(text)
    if kind is EvidenceKind.UNKNOWN:
        if named:
            raise EvidenceError(
                f"{entry.display}: not a py-spy dump (text or --json) nor a faulthandler dump",
                tip="check the file, or declare its kind in bundle.toml",
            )
        warnings.append(
            ParseWarning(
                source=Location(path=entry.display),
                message="skipped: not recognised as evidence",
            )
        )
        return None
    read = Read(
        source=entry.display,
        captured_at=entry.captured_at or reference,
        rank=entry.hint.rank if entry.hint else None,  # the manifest's wins over the name's
    )
    result = kinds.ENTRIES[kind].parse(text, read)
    usable = result.failures or any(d.threads for d in result.dumps)
    if named and not usable and kind not in CONTEXT_KINDS:
        first = result.warnings[0].message if result.warnings else "no dump found"
        raise EvidenceError(
            f"{entry.display}: no usable dump in this file ({first})",
            tip="the file may be truncated before the first thread; capture it again",
        )
    head, lines = _head(kind, text, parsed=bool(result.dumps))
    return result, _file_record(entry, kind, size, digest, head=head, lines=lines)


def _no_evidence(
    root: str | None, entries: Sequence[ManifestEntry], warnings: Sequence[ParseWarning]
) -> EvidenceError:
    """The error for a bundle in which no file held usable evidence."""
    where = root or ", ".join(e.display for e in entries)
    # A folder the walk did not enter (past the depth cap, unreadable) may hold it: say so.
    unread = [w for w in warnings if w.message.startswith("skipped: a folder")]
    return EvidenceError(
        f"{where}: no usable evidence (no py-spy or faulthandler dump, metric history, "
        "service state, dated log line, environment, code excerpt or goroutine dump)"
        + (
            f"; {len(unread)} folder(s) not read: {unread[0].source.path} "
            f"{unread[0].message.removeprefix('skipped: a folder ')}"
            if unread
            else ""
        ),
        tip=f"move the evidence at most {fileio.MAX_DEPTH} folders down, or make the "
        "folder readable"
        if unread
        else "put the evidence in the folder, or list it in bundle.toml (see `report init`)",
    )


# A file's place in capture order: (time, snapshot index, mtime, file order).
_Order = tuple[datetime, int, float, int]


_EARLIEST = datetime.min.replace(tzinfo=UTC)


# `pid4711-s2.status`, `rank0_s1.txt`, `snapshot-3.status`: the round a file was taken in.
_SNAPSHOT_RE = re.compile(r"(?:^|[-_.])(?:s|snap|snapshot)[-_]?(\d+)(?=[-_.]|$)", re.IGNORECASE)


def snapshot_index(name: str) -> int | None:
    """The snapshot round a file name says (`pid4711-s2.status` -> 2), or None."""
    # The last part of a path as given or walked (never one ending in `/`), without the
    # `PurePosixPath` a call per file would build.
    match = _SNAPSHOT_RE.search(name.rpartition("/")[2])
    return int(match.group(1)) if match else None


def _order(entry: ManifestEntry, index: int) -> _Order:
    try:
        mtime = os.stat(entry.path).st_mtime  # noqa: PTH116 - a str or a Path
    except OSError:
        mtime = 0.0
    snapshot = snapshot_index(entry.display)
    return (
        entry.captured_at or _EARLIEST,
        -1 if snapshot is None else snapshot,
        mtime,
        index,
    )


def _head(kind: EvidenceKind, text: str, *, parsed: bool) -> tuple[str, int]:
    """`EvidenceFile.head` and `.lines` of one file: what later steps quote of it.

    The report embeds raw every file that is neither metrics, nor summarised, nor a dump
    that parsed (`reporter.render.evidence.raw_paths`): its first `HEAD_LINES` lines.
    """
    if kinds.ENTRIES[kind].kept_whole:
        return text, len(text.splitlines())
    if (
        kind in METRIC_KINDS
        or kind in SUMMARISED_KINDS
        or kind in PROC_KINDS
        or (kind in DUMP_KINDS and parsed)
    ):
        return "", 0
    lines = text.splitlines()
    return "\n".join(lines[:HEAD_LINES]), len(lines)


def _file_record(
    entry: ManifestEntry,
    kind: EvidenceKind,
    size: int,
    digest: str,
    *,
    head: str = "",
    lines: int = 0,
) -> EvidenceFile:
    """The bundle's record of one evidence file: what the report lists (and quotes)."""
    return EvidenceFile(
        path=entry.display,
        kind=kind,
        sniffed=entry.kind is None,
        size=size,
        captured_at=entry.captured_at,
        rank_hint=entry.hint,
        description=entry.description,
        digest=digest,
        head=head,
        lines=lines,
        host=entry.host,
    )
