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
import json
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reporter.errors import EvidenceError, ManifestError, UsageError
from reporter.evidence import metrics
from reporter.evidence import sniff as sniffing
from reporter.evidence._times import parse_duration
from reporter.gcpause import gc_paused
from reporter.model import (
    CONTEXT_KINDS,
    Bundle,
    CodeExcerpt,
    Environment,
    EventKind,
    EvidenceFile,
    EvidenceKind,
    FailedDump,
    GoroutineDump,
    Location,
    Manifest,
    MetricSeries,
    ParseWarning,
    ProcessDump,
    ProcessNote,
    RankHint,
    TimelineEvent,
    WedgeSettings,
)

MANIFEST_NAME = "bundle.toml"
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
)
_NOT_EVIDENCE_RE = re.compile("|".join(fnmatch.translate(p) for p in _NOT_EVIDENCE))
_KINDS = {kind.value: kind for kind in EvidenceKind if kind is not EvidenceKind.UNKNOWN}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    """One `[[evidence]]` table, resolved to one file."""

    path: Path
    display: str
    kind: EvidenceKind | None
    captured_at: datetime | None
    hint: RankHint | None
    description: str


def load(paths: Sequence[Path], *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Bundle:
    """Load one bundle folder, or one or more loose evidence files, into a `Bundle`.

    Each loose file is one capture; the same PID in several files becomes several
    snapshots of that process, in the order the files were given.
    """
    if not paths:
        raise UsageError("no evidence given", tip="pass a bundle folder or py-spy dump files")
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
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


def _load_files(paths: Sequence[Path], *, max_file_bytes: int) -> Bundle:
    entries = [
        _Entry(path=p, display=str(p), kind=None, captured_at=None, hint=None, description="")
        for p in paths
    ]
    return _assemble(None, Manifest(), entries, (), max_file_bytes=max_file_bytes, strict=True)


def _load_folder(root: Path, *, max_file_bytes: int) -> Bundle:
    manifest_path = root / MANIFEST_NAME
    warnings: list[ParseWarning] = []
    manifest = Manifest()
    listed: list[_Entry] = []
    if manifest_path.is_file():
        text = _read_text(manifest_path, display=MANIFEST_NAME, max_file_bytes=max_file_bytes)
        manifest, listed = parse_manifest(text, root=root)
    # Manifest entries are already relative to the root: compare relative names,
    # which costs no system call per file (resolving 4,096 paths does).
    seen = {entry.display for entry in listed}
    extra: list[_Entry] = []
    # The baseline bundle and the deployed source copy are not this bundle's evidence.
    skip = tuple(p.strip("/") + "/" for p in (manifest.baseline, manifest.source_root) if p)
    for rel, path in _walk(root, skip=skip):
        if rel in seen:
            continue
        extra.append(
            _Entry(path=path, display=rel, kind=None, captured_at=None, hint=None, description="")
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


def _walk(root: Path, *, skip: tuple[str, ...] = ()) -> list[tuple[str, Path]]:
    """Every candidate evidence file below `root` as (relative posix path, path), sorted.

    `skip` holds folder prefixes (`baseline/`) whose files are not evidence of this bundle.
    """
    found: list[tuple[str, Path]] = []
    base = len(str(root).rstrip(os.sep)) + 1
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if _NOT_EVIDENCE_RE.match(name):
                continue
            full = os.path.join(dirpath, name)  # noqa: PTH118 - string join: 4,096 files, no Path per step
            rel = full[base:].replace(os.sep, "/")
            if skip and rel.startswith(skip):
                continue
            found.append((rel, Path(full)))
    found.sort(key=lambda item: item[0])
    return found


def _assemble(
    root: str | None,
    manifest: Manifest,
    entries: Sequence[_Entry],
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
    # Dates a scrape or log that has no time of its own: the earliest manifest time.
    reference = min((e.captured_at for e in entries if e.captured_at), default=None)
    for index, entry in enumerate(entries):
        named = strict or (listed is not None and index < listed)
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
        goroutine_dumps.extend(
            g
            if g.captured_at or entry.captured_at is None
            else replace(g, captured_at=entry.captured_at)
            for g in result.goroutine_dumps
        )
        if entry.hint is not None:
            hints.append((entry.display, entry.hint))
        files.append(
            EvidenceFile(
                path=entry.display,
                kind=kind,
                sniffed=entry.kind is None,
                size=size,
                captured_at=entry.captured_at,
                rank_hint=entry.hint,
                description=entry.description,
            )
        )
    environment = Environment.combined(environments)
    series, series_warnings = metrics.finish(raw_series)
    all_warnings.extend(series_warnings)
    events.sort(key=lambda e: (e.at, e.source.path, e.source.line, e.kind.value, e.text))
    if not (
        dumps or failures or series or events or environment or code_excerpts or goroutine_dumps
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
        warnings=tuple(all_warnings),
        rank_hints=tuple(hints),
        series=series,
        events=tuple(events),
        environment=environment,
        excerpts=tuple(code_excerpts),
        # Capture order where known (stable: file order otherwise).
        goroutine_dumps=tuple(
            sorted(goroutine_dumps, key=lambda g: g.captured_at or datetime.max.replace(tzinfo=UTC))
        ),
    )


def _read_text(path: Path, *, display: str, max_file_bytes: int) -> str:
    """Read one evidence file as text, refusing empty, binary and oversized files."""
    return _read_evidence(path, display=display, max_file_bytes=max_file_bytes)[0]


def _read_evidence(path: Path, *, display: str, max_file_bytes: int) -> tuple[str, int]:
    """The text of one evidence file and its size in bytes; see `_read_text`."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - one open + fstat, no pathlib overhead per file
            size = os.fstat(handle.fileno()).st_size
            if size > max_file_bytes:
                raise EvidenceError(
                    f"{display}: {_human_size(size)} is larger than the "
                    f"{_human_size(max_file_bytes)} limit for one evidence file",
                    tip="split the file per process, or raise the limit with --max-file-size",
                )
            data = handle.read()
    except OSError as err:
        raise EvidenceError(f"{display}: cannot read ({err.strerror})") from err
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


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"  # pragma: no cover - loop always returns


def parse_manifest(text: str, *, root: Path) -> tuple[Manifest, list[_Entry]]:
    """Parse `bundle.toml`; every evidence path must resolve inside `root`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(
            f"{MANIFEST_NAME}: {err}",
            tip="fix the TOML syntax; `report init` writes a valid example",
        ) from err
    manifest = Manifest(
        title=_string(data, "title", text),
        upstream=tuple(_strings(data, "upstream", text)),
        service=_string(data, "service", text),
        version=_string(data, "version", text),
        world_size=_optional_int(data, "world_size", text),
        # Kept in the manifest's order: the author chose it (summary first, say).
        fields=tuple((str(k), str(v)) for k, v in _table(data, "fields", text).items()),
        events=_events(data, text),
        wedge=_wedge(data, text),
        baseline=_inside(data, "baseline", text, root),
        source_root=_inside(data, "source_root", text, root),
        upstream_ref=_upstream_ref(data, text),
        processes=_collect_processes(data),
    )
    raw_entries = data.get("evidence", [])
    if not isinstance(raw_entries, list):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, 'evidence')}: `evidence` must be an array of tables",
            tip="write each file as a [[evidence]] table",
        )
    entries: list[_Entry] = []
    resolved_root = root.resolve()
    for raw in raw_entries:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, '[[evidence]]')}: every [[evidence]] needs a `path`",
                tip='add path = "relative/file.txt"',
            )
        entries.extend(_expand_entry(raw, root=root, resolved_root=resolved_root, text=text))
    return manifest, entries


def _expand_entry(
    raw: dict[str, Any], *, root: Path, resolved_root: Path, text: str
) -> Iterable[_Entry]:
    pattern: str = raw["path"]
    line = _line_of(text, pattern)
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: evidence path {pattern!r} points outside the bundle",
            tip="copy the file into the bundle folder and use a relative path",
        )
    kind_name = raw.get("kind")
    kind: EvidenceKind | None = None
    if kind_name is not None:
        if kind_name not in _KINDS:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, str(kind_name))}: unknown evidence kind {kind_name!r}",
                tip="use one of: " + ", ".join(sorted(_KINDS)) + " (or leave it out to sniff)",
            )
        kind = _KINDS[kind_name]
    captured_at = _datetime(raw.get("captured_at"), text)
    rank = raw.get("rank")
    if rank is not None and (not isinstance(rank, int) or rank < 0):
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: `rank` must be a non-negative integer, got {rank!r}"
        )
    hint = None
    if rank is not None or raw.get("role") or raw.get("group") or raw.get("instance"):
        hint = RankHint(
            rank=rank,
            role=_opt_str(raw.get("role")),
            group=_opt_str(raw.get("group")),
            instance=_opt_str(raw.get("instance")),
        )
    matches = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else [root / pattern]
    if not matches:
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: no file matches {pattern!r}",
            tip="fix the path or remove the [[evidence]] entry",
        )
    for path in matches:
        resolved = path.resolve()
        if not resolved.is_relative_to(resolved_root):
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: evidence path {pattern!r} resolves outside the bundle",
                tip="copy the file into the bundle folder instead of linking to it",
            )
        if not path.is_file():
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: {path.relative_to(root).as_posix()} does not exist",
                tip="fix the path or remove the [[evidence]] entry",
            )
        yield _Entry(
            path=path,
            display=path.relative_to(root).as_posix(),
            kind=kind,
            captured_at=captured_at,
            hint=hint,
            description=_opt_str(raw.get("description")) or "",
        )


def _events(data: dict[str, Any], text: str) -> tuple[TimelineEvent, ...]:
    """The `[[event]]` tables (`at`, `text`): what the operator did or saw, for the timeline."""
    raw = data.get("event", [])
    if not isinstance(raw, list):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, 'event')}: `event` must be an array of tables",
            tip='write each one as [[event]] with at = 2026-07-14T08:30:00Z and text = "..."',
        )
    # The n-th [[event]] header is the n-th table: its line is the event's source.
    headers = [m.start() for m in re.finditer(r"(?m)^[ \t]*\[\[[ \t]*event[ \t]*\]\]", text)]
    out: list[TimelineEvent] = []
    for position, table in enumerate(raw):
        at_char = headers[position] if position < len(headers) else -1
        line = text.count("\n", 0, at_char) + 1 if at_char >= 0 else 0
        where = f"{MANIFEST_NAME}:{line}"
        if not isinstance(table, dict) or not isinstance(table.get("text"), str):
            raise ManifestError(
                f"{where}: every [[event]] needs `text`", tip='add text = "what happened"'
            )
        moment = _datetime(table.get("at"), text, key="at")
        if moment is None:
            raise ManifestError(
                f"{where}: every [[event]] needs `at`", tip="add at = 2026-07-14T08:30:00Z (UTC)"
            )
        out.append(
            TimelineEvent(
                at=moment,
                kind=EventKind.MANUAL,
                text=" ".join(table["text"].split()),
                source=Location(path=MANIFEST_NAME, line=line),
            )
        )
    return tuple(out)


def _wedge(data: dict[str, Any], text: str) -> WedgeSettings | None:
    """The `[wedge]` table: metric names (`output`, `waiting`, `context`) and `window`."""
    if "wedge" not in data:
        return None
    table = _table(data, "wedge", text)
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("output", "waiting", "context"):
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, key)}: `wedge.{key}` must be a list of metric names"
            )
        for name in value:
            if metrics.parse_selector(name) is None:
                raise ManifestError(
                    f"{MANIFEST_NAME}:{_line_of(text, name)}: {name!r} is not a metric name",
                    tip='write it like "sglang:num_queue_reqs" or "x_total{mode=\\"decode\\"}"',
                )
        lists[key] = tuple(value)
    window: float | None = None
    if "window" in table:
        window = parse_duration(table["window"])
        if window is None:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, 'window')}: `wedge.window` must be a duration",
                tip='write it like "60s", "2m" or a number of seconds',
            )
    return WedgeSettings(
        output=lists["output"],
        waiting=lists["waiting"],
        context=lists["context"],
        window_seconds=window,
    )


def _inside(data: dict[str, Any], key: str, text: str, root: Path) -> str:
    """A path key (`baseline`, `source_root`) that must name something inside the bundle."""
    value = _string(data, key, text)
    if not value:
        return ""
    where = f"{MANIFEST_NAME}:{_line_of(text, key)}"
    if Path(value).is_absolute() or ".." in Path(value).parts:
        raise ManifestError(
            f"{where}: {key} {value!r} points outside the bundle",
            tip="copy it into the bundle folder and use a relative path",
        )
    target = root / value
    if not target.exists():
        raise ManifestError(f"{where}: {key} {value!r} does not exist in the bundle")
    if not target.resolve().is_relative_to(root.resolve()):
        raise ManifestError(f"{where}: {key} {value!r} resolves outside the bundle")
    return value


_UPSTREAM_REF_KEYS = ("repo", "package", "module", "tag", "commit", "version", "path_prefix")


def _collect_processes(data: dict[str, Any]) -> tuple[ProcessNote, ...]:
    """`[[collect.target]]` and `[[collect.process]]`: the process tree `report collect`
    recorded. Tolerant: an entry without an integer `pid` is skipped (the table is the
    collector's own record, not something the loader must enforce)."""
    collect = data.get("collect")
    if not isinstance(collect, dict):
        return ()
    out: dict[int, ProcessNote] = {}
    for key in ("target", "process"):
        entries = collect.get(key, [])
        if not isinstance(entries, list):
            continue
        for raw in entries:
            if not isinstance(raw, dict) or not isinstance(raw.get("pid"), int):
                continue

            def num(name: str, raw: dict[str, Any] = raw) -> int | None:
                value = raw.get(name)
                return value if isinstance(value, int) and not isinstance(value, bool) else None

            def text_of(name: str, raw: dict[str, Any] = raw) -> str:
                value = raw.get(name)
                return value if isinstance(value, str) else ""

            out.setdefault(
                raw["pid"],
                ProcessNote(
                    pid=raw["pid"],
                    ppid=num("ppid"),
                    pgid=num("pgid"),
                    title=text_of("title"),
                    cmdline=text_of("cmdline"),
                    launcher=num("launcher"),
                ),
            )
    return tuple(out.values())


def _upstream_ref(data: dict[str, Any], text: str) -> tuple[tuple[str, str], ...]:
    """`[upstream_ref]`: how to turn the installed version into a git ref for permalinks."""
    table = _table(data, "upstream_ref", text)
    out: list[tuple[str, str]] = []
    for key, value in table.items():
        where = f"{MANIFEST_NAME}:{_line_of(text, key)}"
        if key not in _UPSTREAM_REF_KEYS:
            raise ManifestError(
                f"{where}: unknown key `upstream_ref.{key}`",
                tip="use: " + ", ".join(_UPSTREAM_REF_KEYS),
            )
        if not isinstance(value, str):
            raise ManifestError(f"{where}: `upstream_ref.{key}` must be a string")
        out.append((key, value))
    return tuple(out)


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of `needle` in the manifest (0 if absent)."""
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 0


def _string(data: dict[str, Any], key: str, text: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: `{key}` must be a string")
    return value


def _strings(data: dict[str, Any], key: str, text: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, key)}: `{key}` must be a list of strings"
        )
    for repo in value:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, repo)}: upstream {repo!r} is not owner/name",
                tip='write it like "sgl-project/sglang"',
            )
    return list(value)


def _table(data: dict[str, Any], key: str, text: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: `[{key}]` must be a table")
    return value


def _optional_int(data: dict[str, Any], key: str, text: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, key)}: `{key}` must be a positive integer"
        )
    return value


def _opt_str(value: object) -> str | None:
    return str(value) if value is not None else None


def _datetime(value: object, text: str, *, key: str = "captured_at") -> datetime | None:
    """A TOML datetime or ISO string; naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as err:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, value)}: {key} {value!r} is not a date-time",
                tip="write it as 2026-07-14T08:34:44Z",
            ) from err
    else:
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: {key} must be a date-time")
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def draft_manifest(root: Path) -> str:
    """A commented `bundle.toml` for the evidence found in `root`, for `report init`.

    Every recognised file gets an `[[evidence]]` entry with its sniffed kind; a rank
    read from the file name is suggested in a comment, never asserted.
    """
    from reporter.analysis.ranks import rank_from_filename

    lines = [
        "# Evidence bundle manifest, written by `report init`. Every key is optional.",
        "# Edit it, then run: report draft " + str(root),
        "",
        "# The incident title, used as the report title.",
        f"title = {_toml_str(root.resolve().name.replace('-', ' ').replace('_', ' '))}",
        "# Upstream repositories (owner/name) to search and file against.",
        'upstream = []  # e.g. ["sgl-project/sglang"]',
        "# What was running, and its version.",
        'service = ""',
        'version = ""',
        "# Ranks expected; with it, absent ranks are named as missing.",
        "# world_size = 8",
        "",
        "[fields]",
        "# Free text for the report: any keys.",
        '# summary = "Clients hang; /health says 200; GPUs idle."',
        '# reproduction = "..."',
    ]
    skipped: list[str] = []
    for rel, path in _walk(root):
        try:
            text = _read_text(path, display=rel, max_file_bytes=DEFAULT_MAX_FILE_BYTES)
        except EvidenceError as err:
            skipped.append(f"# skipped {rel}: {err.message.removeprefix(rel + ': ')}")
            continue
        kind = sniffing.sniff(text)
        if kind is EvidenceKind.UNKNOWN:
            skipped.append(f"# skipped {rel}: not recognised as evidence")
            continue
        lines += ["", "[[evidence]]", f"path = {_toml_str(rel)}", f'kind = "{kind.value}"']
        lines.append("# captured_at = 2026-01-01T00:00:00Z  # when the dump was taken (UTC)")
        rank = rank_from_filename(rel)
        lines.append(
            f"# rank = {rank}  # suggested by the file name; uncomment to assert it"
            if rank is not None
            else "# rank = 0"
        )
        lines.append('# role = "scheduler"')
    if skipped:
        lines += ["", *skipped]
    return "\n".join(lines) + "\n"


def _toml_str(text: str) -> str:
    """A TOML basic string (JSON string escaping is valid TOML for these characters)."""
    return json.dumps(text, ensure_ascii=False)
