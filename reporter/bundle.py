"""Load an evidence bundle (a folder, optionally with `bundle.toml`) or loose files into a `Bundle`.

This is the evidence layer's only file I/O. Input: paths from the command line.
Output: one frozen `Bundle` with every dump, failed dump and parse warning.

Manifest (`bundle.toml`), by example::

    title = "TP ranks split between all_reduce and on_idle"
    upstream = ["sgl-project/sglang"]
    service = "sglang"
    version = "0.5.2"
    world_size = 4

    [fields]
    summary = "Clients hang; /health says 200."

    [[evidence]]
    path = "snapshots/rank*_s1.txt"   # globs allowed; must stay inside the bundle
    kind = "pyspy-text"               # optional; sniffed when absent
    captured_at = 2026-07-14T08:34:44Z
    rank = 0
    role = "scheduler"

    [[event]]                         # manual timeline entries
    at = 2026-07-14T08:31:00Z
    text = "on-call restarted the router"

    baseline = "baseline/"            # optional: the last good run, a bundle folder inside this one
    source_root = "source/"           # optional: deployed source files, for code excerpts

    [upstream_ref]                    # optional: permalinks for the service's own files
    package = "sglang"                # whose installed version fills {version}
    tag = "v{version}"                # or commit = "<sha>"
    path_prefix = "python/"

    [wedge]                           # optional: which metrics show a wedge (see analysis/wedge.py)
    output = ["sglang:gen_throughput"]
    waiting = ["sglang:num_running_reqs", "sglang:num_queue_reqs"]
    window = "60s"

Files the manifest does not list are still sniffed and loaded, with a warning,
so nothing the operator dropped into the folder is silently ignored.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from reporter import fileio
from reporter.errors import EvidenceError, InputError, ManifestError, UsageError
from reporter.evidence import flight_recorder, metrics
from reporter.evidence import sniff as sniffing
from reporter.fileio import check_regular, human_size, read_bytes_bounded
from reporter.gcpause import gc_paused
from reporter.manifest import (
    MANIFEST_NAME,
    ManifestEntry,
    TomlDocument,
    parse_manifest,
)
from reporter.model import (
    CONTEXT_KINDS,
    HEAD_LINES,
    METRIC_KINDS,
    SUMMARISED_KINDS,
    Bundle,
    CodeExcerpt,
    Environment,
    EvidenceFile,
    EvidenceKind,
    FailedDump,
    FrTrace,
    GoroutineDump,
    Location,
    Manifest,
    MetricSeries,
    ParseResult,
    ParseWarning,
    ProcessDump,
    RankHint,
    TimelineEvent,
)
from reporter.secrets import mask_text

DEFAULT_MAX_FILE_BYTES = 512 * 1024 * 1024
# Bytes inspected for NUL characters when deciding that a file is binary.
_BINARY_PROBE = 8192
# Files in a bundle folder that are never evidence: notes and the scripts that made the evidence.
_NOT_EVIDENCE = (
    "README*",
    "*.md",
    "*.py",
    "*.sh",
    "*.toml",
    "*.j2",
    ".*",
    "*.go",
    "go.mod",
    "go.sum",
    *(
        # What reporter itself writes (reports, their backups, previews, charts, the
        # filing record, the issue index): a report saved beside the evidence must not
        # change the next analysis of it.
        "*.bak",
        "*.bak.*",
        "*.html",
        "*.svg",
        "*.sqlite3",
        "*.sqlite3-*",
        "*.lock",
        "*.tmp",
    ),
)
# Reporter's own Markdown (report, upstream draft) whatever it was renamed to: region markers
# or reporter front matter in the first lines.
_OWN_OUTPUT_RE = re.compile(
    r"\A(?:---\n(?:.*\n){0,40}?(?:reporter|kind: (?:incident-report|upstream-draft))\b"
    r"|[\s\S]{0,4096}?<!-- reporter:begin )"
)
_NOT_EVIDENCE_RE = re.compile("|".join(fnmatch.translate(p) for p in _NOT_EVIDENCE))


def load(paths: Sequence[Path], *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Bundle:
    """Load one bundle folder, or one or more loose evidence files, into a `Bundle`.

    Each loose file is one capture; the same PID in several files becomes several
    snapshots of that process, in the order the files were given.
    """
    if not paths:
        raise UsageError("no evidence given", tip="pass a bundle folder or py-spy dump files")
    for path in paths:
        if not path.exists():
            raise UsageError(
                f"{path}: no such file or folder",
                tip="pass an existing file or bundle folder",
            )
    folders = [p for p in paths if p.is_dir()]
    if folders and len(paths) > 1:
        raise UsageError(
            f"{folders[0]}: a bundle folder must be given alone",
            tip="pass either one folder or a list of files",
        )
    # Loading builds millions of small acyclic objects; the cyclic collector would
    # rescan them over and over and free nothing, so it waits until the load is done.
    with gc_paused():
        if folders:
            return _load_folder(folders[0], max_file_bytes=max_file_bytes)
        return _load_files(paths, max_file_bytes=max_file_bytes)


def load_text(
    text: str, *, display: str = "<stdin>", max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Bundle:
    """One pasted capture (`report analyze -`): loaded like a loose file named `display`."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="reporter-stdin-") as folder:
        path = Path(folder) / "stdin.txt"
        path.write_text(text, encoding="utf-8")
        entry = ManifestEntry(
            path=path, display=display, kind=None, captured_at=None, hint=None, description=""
        )
        with gc_paused():
            return _assemble(
                None, Manifest(), [entry], (), max_file_bytes=max_file_bytes, strict=True
            )


def _load_files(paths: Sequence[Path], *, max_file_bytes: int) -> Bundle:
    entries = [
        ManifestEntry(
            path=p, display=str(p), kind=None, captured_at=None, hint=None, description=""
        )
        for p in paths
    ]
    return _assemble(None, Manifest(), entries, (), max_file_bytes=max_file_bytes, strict=True)


def _load_folder(root: Path, *, max_file_bytes: int) -> Bundle:
    manifest_path = root / MANIFEST_NAME
    warnings: list[ParseWarning] = []
    manifest = Manifest()
    listed: list[ManifestEntry] = []
    if manifest_path.is_file():
        text = _read_text(manifest_path, display=MANIFEST_NAME, max_file_bytes=max_file_bytes)
        read = parse_manifest(text, root=root, metric_name=metrics.parse_selector)
        manifest, listed = read.manifest, list(read.entries)
        warnings.extend(read.warnings)
    # Manifest entries are already relative to the root: compare relative names,
    # which costs no system call per file (resolving 4,096 paths does).
    seen = {entry.display for entry in listed}
    resolved_root: Path | None = None
    extra: list[ManifestEntry] = []
    # The baseline bundle and the deployed source copy are not this bundle's evidence.
    skip = tuple(p.strip("/") + "/" for p in (manifest.baseline, manifest.source_root) if p)
    walked, walk_warnings = _walk(root, skip=skip)
    warnings.extend(walk_warnings)
    for rel, path in walked:
        if rel in seen:
            continue
        if path.is_symlink():
            # An unlisted link is held to the rule listed ones are: it stays in the bundle.
            resolved_root = resolved_root or root.resolve()
            try:
                leaves = not path.resolve(strict=True).is_relative_to(resolved_root)
            except (OSError, RuntimeError):
                warnings.append(
                    ParseWarning(
                        source=Location(path=rel),
                        message="skipped: a symbolic link that loops or leads nowhere",
                    )
                )
                continue
            if leaves:
                warnings.append(
                    ParseWarning(
                        source=Location(path=rel),
                        message="skipped: a symbolic link that leaves the bundle",
                    )
                )
                continue
        extra.append(
            ManifestEntry(
                path=path, display=rel, kind=None, captured_at=None, hint=None, description=""
            )
        )
        if listed:
            warnings.append(
                ParseWarning(
                    source=Location(path=rel),
                    message="not listed in bundle.toml; loaded anyway (sniffed)",
                )
            )
    bundle = _assemble(
        str(root),
        manifest,
        [*listed, *extra],
        tuple(warnings),
        max_file_bytes=max_file_bytes,
        strict=False,
        listed=len(listed),
    )
    if manifest.baseline:
        bundle = replace(bundle, baseline=load_baseline(root / manifest.baseline, max_file_bytes))
    return bundle


def load_baseline(folder: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Bundle:
    """The last good run: a bundle folder of its own, or one evidence file (`--baseline`)."""
    if not folder.exists():
        raise ManifestError(
            f"{folder}: the baseline named in bundle.toml does not exist",
            tip="copy the good run's evidence there, or remove `baseline`",
        )
    with gc_paused():
        if folder.is_dir():
            return _load_folder(folder, max_file_bytes=max_file_bytes)
        return _load_files([folder], max_file_bytes=max_file_bytes)


def _walk(
    root: Path, *, skip: tuple[str, ...] = ()
) -> tuple[list[tuple[str, Path]], list[ParseWarning]]:
    """Every candidate evidence file below `root` as (relative posix path, path), sorted,
    and a warning for each folder not walked (too deep, unreadable).

    `skip` holds folder prefixes (`baseline/`) whose files are not evidence of this bundle.
    The walk is `fileio.walk`: iterative, links never followed into folders, depth capped.
    """
    walked = fileio.walk(root, skip=skip)
    found = [
        (w.rel, w.path)
        for w in walked.files
        if not _NOT_EVIDENCE_RE.match(w.path.name) and not (skip and w.rel.startswith(skip))
    ]
    warnings = [
        ParseWarning(source=Location(path=rel), message=f"skipped: a folder {why}")
        for rel, why in walked.skipped
    ]
    return found, warnings


def _assemble(
    root: str | None,
    manifest: Manifest,
    entries: Sequence[ManifestEntry],
    warnings: tuple[ParseWarning, ...],
    *,
    max_file_bytes: int,
    strict: bool,
    listed: int | None = None,
) -> Bundle:
    """Read, sniff and parse every entry. `strict` entries must be usable evidence.

    Files the user named (loose files, manifest entries) must be usable; files only
    found by walking the folder may be skipped with a warning.
    """
    files: list[EvidenceFile] = []
    dumps: list[ProcessDump] = []
    failures: list[FailedDump] = []
    all_warnings = list(warnings)
    hints: list[tuple[str, RankHint]] = []
    raw_series: list[MetricSeries] = []
    events: list[TimelineEvent] = list(manifest.events)
    environments: list[Environment] = []
    code_excerpts: list[CodeExcerpt] = []
    goroutine_dumps: list[GoroutineDump] = []
    fr_traces: list[FrTrace] = []
    # Dates a scrape or log that has no time of its own: the earliest manifest time.
    reference = min((e.captured_at for e in entries if e.captured_at), default=None)
    for index, entry in enumerate(entries):
        named = strict or (listed is not None and index < listed)
        pickled = _read_fr_pickle(entry, max_file_bytes=max_file_bytes)
        if pickled is not None:
            fr_result, size = pickled
            fr_traces.extend(
                replace(tr, captured_at=entry.captured_at) for tr in fr_result.flight_recorder
            )
            all_warnings.extend(fr_result.warnings)
            if entry.hint is not None:
                hints.append((entry.display, entry.hint))
            files.append(
                EvidenceFile(
                    path=entry.display,
                    kind=EvidenceKind.FLIGHT_RECORDER,
                    sniffed=entry.kind is None,
                    size=size,
                    captured_at=entry.captured_at,
                    rank_hint=entry.hint,
                    description=entry.description,
                )
            )
            continue
        try:
            text, size = _read_evidence(
                entry.path, display=entry.display, max_file_bytes=max_file_bytes
            )
        except EvidenceError as err:
            # Metric, service and log files are never fatal: their problems are warnings.
            if named and entry.kind not in CONTEXT_KINDS:
                raise
            all_warnings.append(
                ParseWarning(source=Location(path=entry.display), message=f"skipped: {err.message}")
            )
            continue
        if entry.kind is None and _OWN_OUTPUT_RE.match(text):
            if named:
                raise EvidenceError(
                    f"{entry.display}: a report written by reporter, not evidence "
                    "(its embedded dumps would count twice)",
                    tip="pass the bundle folder or the dump files the report was drafted from",
                )
            # A report this tool wrote, saved inside the bundle: never evidence, and not
            # "unlisted evidence" either.
            all_warnings = [w for w in all_warnings if w.source.path != entry.display]
            continue
        kind = entry.kind or sniffing.sniff(text)
        if kind is EvidenceKind.UNKNOWN:
            if named:
                raise EvidenceError(
                    f"{entry.display}: not a py-spy dump (text or --json) nor a faulthandler dump",
                    tip="check the file, or declare its kind in bundle.toml",
                )
            all_warnings.append(
                ParseWarning(
                    source=Location(path=entry.display),
                    message="skipped: not recognised as evidence",
                )
            )
            continue
        if kind is EvidenceKind.FLIGHT_RECORDER:
            # The manifest's rank wins over the file name's.
            result = flight_recorder.parse_json(
                text, source=entry.display, rank=entry.hint.rank if entry.hint else None
            )
        else:
            result = sniffing.parse(
                kind, text, source=entry.display, captured_at=entry.captured_at or reference
            )
        usable = result.failures or any(d.threads for d in result.dumps)
        if named and not usable and kind not in CONTEXT_KINDS:
            first = result.warnings[0].message if result.warnings else "no dump found"
            raise EvidenceError(
                f"{entry.display}: no usable dump in this file ({first})",
                tip="the file may be truncated before the first thread; capture it again",
            )
        stamped = [
            d
            if d.captured_at or entry.captured_at is None
            else replace(d, captured_at=entry.captured_at)
            for d in result.dumps
        ]
        dumps.extend(stamped)
        failures.extend(
            f
            if f.captured_at or entry.captured_at is None
            else replace(f, captured_at=entry.captured_at)
            for f in result.failures
        )
        all_warnings.extend(result.warnings)
        raw_series.extend(result.series)
        events.extend(result.events)
        if result.environment:
            environments.append(result.environment)
        code_excerpts.extend(result.excerpts)
        fr_traces.extend(
            replace(tr, captured_at=tr.captured_at or entry.captured_at)
            for tr in result.flight_recorder
        )
        goroutine_dumps.extend(
            g
            if g.captured_at or entry.captured_at is None
            else replace(g, captured_at=entry.captured_at)
            for g in result.goroutine_dumps
        )
        if entry.hint is not None:
            hints.append((entry.display, entry.hint))
        head, lines = _head(kind, text, parsed=bool(result.dumps))
        files.append(
            EvidenceFile(
                path=entry.display,
                kind=kind,
                sniffed=entry.kind is None,
                size=size,
                captured_at=entry.captured_at,
                rank_hint=entry.hint,
                description=entry.description,
                head=head,
                lines=lines,
            )
        )
    environment = Environment.combined(environments)
    series, series_warnings = metrics.finish(raw_series)
    all_warnings.extend(series_warnings)
    events.sort(key=lambda e: (e.at, e.source.path, e.source.line, e.kind.value, e.text))
    if not (
        dumps
        or failures
        or series
        or events
        or environment
        or code_excerpts
        or goroutine_dumps
        or fr_traces
    ):
        where = root or ", ".join(e.display for e in entries)
        raise EvidenceError(
            f"{where}: no usable evidence (no py-spy or faulthandler dump, metric history, "
            "service state, dated log line, environment, code excerpt or goroutine dump)",
            tip="put the evidence in the folder, or list it in bundle.toml (see `report init`)",
        )
    return Bundle(
        root=root,
        manifest=manifest,
        files=tuple(files),
        dumps=tuple(dumps),
        failures=tuple(failures),
        warnings=_inert_warnings(all_warnings),
        rank_hints=tuple(hints),
        series=series,
        events=tuple(events),
        environment=environment,
        excerpts=tuple(code_excerpts),
        # Capture order where known (stable: file order otherwise).
        goroutine_dumps=tuple(
            sorted(goroutine_dumps, key=lambda g: g.captured_at or datetime.max.replace(tzinfo=UTC))
        ),
        flight_recorder=tuple(
            sorted(
                fr_traces,
                key=lambda tr: (tr.trace_set, tr.rank is None, tr.rank or 0, tr.source.path),
            )
        ),
    )


# Dump kinds: embedded raw only when no dump parsed from the file (its failure output).
_DUMP_KINDS = frozenset(
    {EvidenceKind.PYSPY_TEXT, EvidenceKind.PYSPY_JSON, EvidenceKind.FAULTHANDLER}
)
# Environment-script outputs: the upstream draft quotes them whole (allowlisted there).
_WHOLE_KINDS = frozenset({EvidenceKind.SGLANG_CHECK_ENV, EvidenceKind.VLLM_COLLECT_ENV})


def _head(kind: EvidenceKind, text: str, *, parsed: bool) -> tuple[str, int]:
    """`EvidenceFile.head` and `.lines` of one file: what later steps quote of it.

    The report embeds raw every file that is neither metrics, nor summarised, nor a dump
    that parsed (`reporter.render.evidence.raw_paths`): its first `HEAD_LINES` lines.
    """
    if kind in _WHOLE_KINDS:
        return text, len(text.splitlines())
    if kind in METRIC_KINDS or kind in SUMMARISED_KINDS or (kind in _DUMP_KINDS and parsed):
        return "", 0
    lines = text.splitlines()
    return "\n".join(lines[:HEAD_LINES]), len(lines)


def _read_fr_pickle(entry: ManifestEntry, *, max_file_bytes: int) -> tuple[ParseResult, int] | None:
    """A pickled Flight Recorder dump (the only binary evidence), parsed; None for other files.

    Any pickle is taken for one: one that holds code is refused by the parser, loudly.
    """
    if entry.kind not in (None, EvidenceKind.FLIGHT_RECORDER):
        return None
    try:
        # Only a regular file is opened: a FIFO or device would block or never end here; the
        # text reader refuses it with its reason.
        check_regular(Path(entry.path), display=entry.display)
    except InputError:
        return None
    try:
        with open(entry.path, "rb") as handle:  # noqa: PTH123 - one open for the peek and the read
            if not flight_recorder.sniff_bytes(handle.read(2)):
                return None
            size = os.fstat(handle.fileno()).st_size
            if size > max_file_bytes:
                raise EvidenceError(
                    f"{entry.display}: {human_size(size)} is larger than the "
                    f"{human_size(max_file_bytes)} limit for one evidence file",
                    tip="raise the limit with --max-file-size",
                )
            handle.seek(0)
            data = handle.read()
    except OSError:
        return None  # the text reader reports unreadable files
    rank = entry.hint.rank if entry.hint else None
    return flight_recorder.parse_pickle(data, source=entry.display, rank=rank), size


# Above this many warnings, only our own secret shapes are looked for in them (the
# detect-secrets plugins cost ~0.3 ms a line).
_THOROUGH_WARNINGS = 2000


def _inert_warnings(warnings: Sequence[ParseWarning]) -> tuple[ParseWarning, ...]:
    """Warnings with secrets masked: they quote evidence lines, and reach the terminal and --json."""
    thorough = len(warnings) <= _THOROUGH_WARNINGS
    out: list[ParseWarning] = []
    for warning in warnings:
        message = mask_text(warning.message, library=thorough)
        out.append(warning if message == warning.message else replace(warning, message=message))
    return tuple(out)


def _read_text(path: Path, *, display: str, max_file_bytes: int) -> str:
    """Read one evidence file as text, refusing empty, binary and oversized files."""
    return _read_evidence(path, display=display, max_file_bytes=max_file_bytes)[0]


def _read_evidence(path: Path, *, display: str, max_file_bytes: int) -> tuple[str, int]:
    """The text of one evidence file and its size in bytes; see `_read_text`.

    Only regular files are read (a FIFO, device, socket or folder is refused before it
    is opened), and never past the size limit (`reporter.fileio`).
    """
    try:
        data = read_bytes_bounded(path, display=display, max_bytes=max_file_bytes)
    except InputError as err:
        if "larger than the" in err.message:
            raise EvidenceError(
                f"{display}: {err.message.split(': ', 1)[1].replace(' for one file', '')}"
                " for one evidence file",
                tip="split the file per process, or raise the limit with --max-file-size",
            ) from err
        raise EvidenceError(err.message, tip=err.tip) from err
    size = len(data)
    if not data.strip():
        raise EvidenceError(
            f"{display}: the file is empty", tip="capture the dump again; py-spy may have failed"
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # UTF-16 with a BOM: Grafana's "Download for Excel" CSV, Windows tools' logs.
        return data.decode("utf-16", errors="replace"), size
    if b"\x00" in data[:_BINARY_PROBE] and not _nul_separated_text(data[:_BINARY_PROBE]):
        raise EvidenceError(
            f"{display}: binary data, not a text dump",
            tip="pass the text output of `py-spy dump` (or --json), not a core file or archive",
        )
    return data.decode("utf-8", errors="replace"), size


def _nul_separated_text(probe: bytes) -> bool:
    """True for a `/proc/PID/environ` or `cmdline` copy: text whose separators are NULs.

    Binary files (cores, archives, UTF-16 text) have other control bytes or far more NULs.
    """
    if probe.count(b"\x00") * 3 > len(probe):
        return False
    text = probe.decode("utf-8", errors="replace")
    if len(probe) == _BINARY_PROBE:
        # A multi-byte character cut at the end of the probe decodes as a replacement char.
        text = text.rstrip("\ufffd")
    return not any((c < " " and c not in "\x00\t\n\r") or c in "\x7f\ufffd" for c in text)


def draft_manifest(root: Path) -> str:
    """A commented `bundle.toml` for the evidence found in `root`, for `report init`.

    Every recognised file gets an `[[evidence]]` entry with its sniffed kind; a rank
    read from the file name is suggested in a comment, never asserted.
    """
    from reporter.analysis.ranks import rank_from_filename

    doc = (
        TomlDocument()
        .comment("Evidence bundle manifest, written by `report init`. Every key is optional.")
        .comment(f"Edit it, then run: report draft {root}")
        .blank()
        .comment("The incident title, used as the report title.")
        .key("title", root.resolve().name.replace("-", " ").replace("_", " "))
        .comment("Upstream repositories (owner/name) to search and file against.")
        .key("upstream", [], comment='e.g. ["sgl-project/sglang"]')
        .comment("What was running, and its version.")
        .key("service", "")
        .key("version", "")
        .comment("Ranks expected; with it, absent ranks are named as missing.")
        .comment("world_size = 8")
        .table("fields")
        .comment("Free text for the report: any keys.")
        .comment('summary = "Clients hang; /health says 200; GPUs idle."')
        .comment('reproduction = "..."')
    )
    skipped: list[str] = []
    walked, walk_warnings = _walk(root)
    skipped.extend(
        f"skipped {w.source.path}: {w.message.removeprefix('skipped: ')}" for w in walk_warnings
    )
    for rel, path in walked:
        try:
            text = _read_text(path, display=rel, max_file_bytes=DEFAULT_MAX_FILE_BYTES)
        except EvidenceError as err:
            skipped.append(f"skipped {rel}: {err.message.removeprefix(rel + ': ')}")
            continue
        kind = sniffing.sniff(text)
        if kind is EvidenceKind.UNKNOWN:
            skipped.append(f"skipped {rel}: not recognised as evidence")
            continue
        doc.array_table("evidence").key("path", rel).key("kind", kind.value)
        doc.comment("captured_at = 2026-01-01T00:00:00Z  # when the dump was taken (UTC)")
        rank = rank_from_filename(rel)
        doc.comment(
            f"rank = {rank}  # suggested by the file name; uncomment to assert it"
            if rank is not None
            else "rank = 0"
        )
        doc.comment('role = "scheduler"')
    if skipped:
        doc.blank()
        for line in skipped:
            doc.comment(line)
    return doc.text()
