"""Load an evidence bundle (a folder, optionally with `bundle.toml`) or loose files into a `Bundle`.

This module and the two it calls are the evidence's only file I/O: `files.py` reads a file
(size limit, text, digest), `assemble.py` sniffs, parses and folds the files into the
bundle. Input: paths from the command line. Output: one frozen `Bundle` with every dump,
failed dump and parse warning.

Manifest (`bundle.toml`), by example::

    title = "TP ranks split between all_reduce and on_idle"
    upstream = ["sgl-project/sglang"]
    service = "sglang"
    version = "0.5.2"
    world_size = 4
    host = "node-3"                   # optional: where the files were captured (a process is
                                      # (host, PID)); per [[evidence]] too

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

Several folders (`report analyze node-a/ node-b/`) are hosts of one job: each file keeps its
folder's host (its manifest's `host`, else the folder's name) and its path gains the folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path, PurePosixPath

from reporter.analysis.ranks import rank_from_filename
from reporter.core import fileio
from reporter.core.errors import EvidenceError, ManifestError, UsageError
from reporter.core.gcpause import gc_paused
from reporter.evidence import kinds, metrics
from reporter.evidence import sniff as sniffing
from reporter.load import files
from reporter.load.assemble import assemble
from reporter.load.manifest import (
    MANIFEST_NAME,
    ManifestEntry,
    TomlDocument,
    parse_manifest,
)
from reporter.model import (
    SUMMARISED_KINDS,
    Bundle,
    EvidenceKind,
    Location,
    Manifest,
    ParseWarning,
)

# The evidence file size limit (`--max-file-size`): the one limit of core/fileio.py.
DEFAULT_MAX_FILE_BYTES = fileio.DEFAULT_MAX_BYTES


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
    if folders and len(folders) < len(paths):
        loose = next(p for p in paths if not p.is_dir())
        raise UsageError(
            f"{loose}: a loose file cannot be mixed with bundle folders",
            tip="pass bundle folders (several: hosts of one job) or a list of files",
        )
    # Loading builds millions of small acyclic objects; the cyclic collector would
    # rescan them over and over and free nothing, so it waits until the load is done.
    with gc_paused():
        try:
            if len(folders) > 1:
                return _load_folders(folders, max_file_bytes=max_file_bytes)
            if folders:
                return _load_given_folder(folders[0], max_file_bytes=max_file_bytes)
            return _load_files(paths, max_file_bytes=max_file_bytes)
        finally:
            # The parsers' caches serve one load: the analysis after it allocates in
            # their place (about 3 MiB of keys at 4,096 ranks, before the command's peak).
            for entry in kinds.REGISTRY:
                if entry.forget is not None:
                    entry.forget()


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
            return assemble(
                None, Manifest(), [entry], (), max_file_bytes=max_file_bytes, strict=True
            )


def _load_files(paths: Sequence[Path], *, max_file_bytes: int) -> Bundle:
    entries = [
        ManifestEntry(
            path=p, display=str(p), kind=None, captured_at=None, hint=None, description=""
        )
        for p in paths
    ]
    return assemble(None, Manifest(), entries, (), max_file_bytes=max_file_bytes, strict=True)


def _load_folder(root: Path, *, max_file_bytes: int) -> Bundle:
    manifest, listed, extra, warnings = _folder_entries(root, max_file_bytes=max_file_bytes)
    bundle = _assemble_folder(str(root), manifest, listed, extra, warnings, max_file_bytes)
    if manifest.baseline:
        bundle = replace(bundle, baseline=load_baseline(root / manifest.baseline, max_file_bytes))
    return bundle


def _assemble_folder(
    root: str | None,
    manifest: Manifest,
    listed: list[ManifestEntry],
    extra: list[ManifestEntry],
    warnings: Sequence[ParseWarning],
    max_file_bytes: int,
) -> Bundle:
    """A folder's (or folders') bundle: the files the manifest lists, then those found
    beside them; a bad file is a warning, not an error."""
    return assemble(
        root,
        manifest,
        [*listed, *extra],
        tuple(warnings),
        max_file_bytes=max_file_bytes,
        strict=False,
        listed=len(listed),
    )


def _load_folders(roots: Sequence[Path], *, max_file_bytes: int) -> Bundle:
    """Several bundle folders as hosts of one job: each file keeps its folder's host (the
    manifest's `host`, else the folder's name) and its path gains the folder as written.

    The first folder's title, service, version, `[wedge]` and baseline stand for the job;
    `[fields]`, events, process trees and `[[collect.remote]]` tables are joined.
    """
    seen: dict[Path, Path] = {}
    for root in roots:
        resolved = root.resolve()
        if resolved in seen:
            raise UsageError(
                f"{root}: the same bundle folder is given twice (also as {seen[resolved]})",
                tip="name each host's bundle folder once",
            )
        seen[resolved] = root
    listed: list[ManifestEntry] = []
    extra: list[ManifestEntry] = []
    warnings: list[ParseWarning] = []
    manifests: list[tuple[str, str, Manifest]] = []
    for root in roots:
        manifest, own_listed, own_extra, own_warnings = _folder_entries(
            root, max_file_bytes=max_file_bytes
        )
        prefix = str(root).rstrip("/") or "/"
        host = manifest.host or root.resolve().name
        manifests.append((prefix, host, manifest))
        for group, into in ((own_listed, listed), (own_extra, extra)):
            into.extend(
                replace(e, display=f"{prefix}/{e.display}", host=e.host or host) for e in group
            )
        warnings.extend(
            replace(w, source=replace(w.source, path=f"{prefix}/{w.source.path}"))
            for w in own_warnings
        )
    manifest = _joined_manifests(manifests, warnings)
    bundle = _assemble_folder(None, manifest, listed, extra, warnings, max_file_bytes)
    bundle = replace(bundle, folders=tuple(prefix for prefix, _, _ in manifests))
    first = next(((p, m) for p, _, m in manifests if m.baseline), None)
    if first is not None:
        baseline = load_baseline(Path(first[0]) / first[1].baseline, max_file_bytes)
        bundle = replace(bundle, baseline=baseline)
    return bundle


def _joined_manifests(
    manifests: Sequence[tuple[str, str, Manifest]], warnings: list[ParseWarning]
) -> Manifest:
    """One manifest for several hosts' bundles (see `_load_folders`)."""
    firsts = [m for _, _, m in manifests]
    worlds = sorted({m.world_size for m in firsts if m.world_size is not None})
    if len(worlds) > 1:
        warnings.append(
            ParseWarning(
                source=Location(path=MANIFEST_NAME),
                message=f"the bundles give different world sizes ({', '.join(map(str, worlds))});"
                f" the largest, {worlds[-1]}, is used",
            )
        )
    fields: list[tuple[str, str]] = []
    for _, host, m in manifests:
        fields.extend((f"{key} ({host})", value) for key, value in m.fields)
    return Manifest(
        title=next((m.title for m in firsts if m.title), ""),
        upstream=tuple(dict.fromkeys(r for m in firsts for r in m.upstream)),
        service=next((m.service for m in firsts if m.service), ""),
        version=next((m.version for m in firsts if m.version), ""),
        world_size=worlds[-1] if worlds else None,
        fields=tuple(fields),
        events=tuple(
            replace(e, source=replace(e.source, path=f"{prefix}/{e.source.path}"))
            for prefix, _, m in manifests
            for e in m.events
        ),
        wedge=next((m.wedge for m in firsts if m.wedge is not None), None),
        upstream_ref=next((m.upstream_ref for m in firsts if m.upstream_ref), ()),
        processes=tuple(
            replace(p, host=p.host or host) for _, host, m in manifests for p in m.processes
        ),
        hosts=tuple(h for m in firsts for h in m.hosts),
    )


def _folder_entries(
    root: Path, *, max_file_bytes: int
) -> tuple[Manifest, list[ManifestEntry], list[ManifestEntry], list[ParseWarning]]:
    """The manifest of one bundle folder, its listed entries, the files it does not list
    (found by walking, sniffed later) and the warnings so far."""
    manifest_path = root / MANIFEST_NAME
    warnings: list[ParseWarning] = []
    manifest = Manifest()
    listed: list[ManifestEntry] = []
    # Unlisted files are warned about only inside the folder the manifest speaks for.
    listed_under = ""
    if manifest_path.is_file():
        text = files.read_text(manifest_path, display=MANIFEST_NAME, max_file_bytes=max_file_bytes)
        read = parse_manifest(text, root=root, metric_name=metrics.parse_selector)
        manifest, listed = read.manifest, list(read.entries)
        warnings.extend(read.warnings)
    else:
        # Never silently ignored: a bundle.toml one level down is used (or said unused).
        manifest, listed, listed_under = _below(root, warnings, max_file_bytes=max_file_bytes)
    # Manifest entries are already relative to the root: compare relative names,
    # which costs no system call per file (resolving 4,096 paths does).
    seen = {entry.display for entry in listed}
    resolved_root: Path | None = None
    extra: list[ManifestEntry] = []
    # The baseline bundle and the deployed source copy are not this bundle's evidence.
    skip = tuple(p.strip("/") + "/" for p in (manifest.baseline, manifest.source_root) if p)
    walked, walk_warnings = files.walk_entries(root, skip=skip)
    warnings.extend(walk_warnings)
    for found in walked:
        rel = found.rel
        if rel in seen:
            continue
        if found.link:  # the listing's word: no `lstat` per file
            path = found.path
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
                path=found.where,
                display=rel,
                kind=None,
                captured_at=None,
                hint=None,
                description="",
                host=manifest.host,
                regular=found.regular,
            )
        )
        if listed and rel.startswith(listed_under):
            warnings.append(
                ParseWarning(
                    source=Location(path=rel),
                    message="not listed in bundle.toml; loaded anyway (sniffed)",
                )
            )
    return manifest, listed, extra, warnings


# --------------------------------------------------------------------------- layouts
# What the folder named on the command line holds when it has no bundle.toml of its own:
# two runs side by side (the last good one and this one), or a bundle one level down.

# Folder (or file-name) words that mark two runs of one service: (last good run, this run).
RUN_PAIRS = (
    ("good", "bad"),
    ("before", "after"),
    ("baseline", "incident"),
    ("working", "broken"),
)
# Two unnamed runs told apart by capture time must lie at least this far apart: captures
# of one incident (several hosts, several tools) overlap or follow within minutes.
RUNS_APART_S = 600.0
_WORD = re.compile(r"[a-z0-9]+")


def _load_given_folder(root: Path, *, max_file_bytes: int) -> Bundle:
    """The folder named on the command line: a bundle, two runs side by side (compared as
    `--baseline` would, and said so), a bundle one level down, or loose evidence."""
    if not (root / MANIFEST_NAME).is_file():
        runs = _two_runs(root, max_file_bytes=max_file_bytes)
        if runs is not None:
            return runs
        only = _only_bundle_below(root)
        if only is not None:
            bundle = _load_folder(only, max_file_bytes=max_file_bytes)
            note = ParseWarning(
                source=Location(path=f"{only.name}/{MANIFEST_NAME}"),
                message=(
                    f"{root} has no {MANIFEST_NAME} and holds one bundle, {only}: that bundle "
                    f"is used. Tip: pass {only} itself"
                ),
            )
            return replace(bundle, warnings=(note, *bundle.warnings))
    return _load_folder(root, max_file_bytes=max_file_bytes)


def _subfolders(root: Path) -> list[Path]:
    """The folders (or links to folders) right below `root` but dot folders, sorted; from
    the listing's types, so a folder of 16,384 files costs no `stat` per file."""
    with os.scandir(root) as entries:
        return sorted(Path(e.path) for e in entries if not e.name.startswith(".") and _is_dir(e))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """`Path.is_dir` of a listed entry: a folder, or a link to one; False when it cannot
    be told."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _only_bundle_below(root: Path) -> Path | None:
    """The one subfolder with a bundle.toml when nothing else of evidence lies in `root`."""
    below = [p for p in _subfolders(root) if (p / MANIFEST_NAME).is_file()]
    if len(below) != 1:
        return None
    prefix = below[0].name + "/"
    beside = [rel for rel, _ in files.walk(root)[0] if not rel.startswith(prefix)]
    return below[0] if not beside else None


def _below(
    root: Path, warnings: list[ParseWarning], *, max_file_bytes: int
) -> tuple[Manifest, list[ManifestEntry], str]:
    """For a folder without bundle.toml: the one bundle.toml one level down, borrowed for
    the files it lists (paths, kinds, times, ranks), its process tree, events and `[wedge]`
    (not its title or fields: it speaks for part of the folder), with a note; several are
    named in a warning with a Tip, unread. Returns the manifest, its entries (paths under
    that folder) and the folder prefix ("" when none was borrowed)."""
    below = [p for p in _subfolders(root) if (p / MANIFEST_NAME).is_file()]
    if not below:
        return Manifest(), [], ""
    if len(below) > 1:
        names = ", ".join(f"{p.name}/{MANIFEST_NAME}" for p in below)
        warnings.append(
            ParseWarning(
                source=Location(path=f"{below[0].name}/{MANIFEST_NAME}"),
                message=(
                    f"{len(below)} bundles one level down ({names}) and none here: their "
                    "manifests are not read, every file is sniffed. Tip: pass one bundle "
                    f"folder, or write a {MANIFEST_NAME} here (`report init`)"
                ),
            )
        )
        return Manifest(), [], ""
    sub = below[0]
    display = f"{sub.name}/{MANIFEST_NAME}"
    text = files.read_text(sub / MANIFEST_NAME, display=display, max_file_bytes=max_file_bytes)
    read = parse_manifest(text, root=sub, metric_name=metrics.parse_selector)
    prefix = f"{sub.name}/"
    entries = [replace(e, display=prefix + e.display) for e in read.entries]
    warnings.extend(
        replace(w, source=replace(w.source, path=prefix + w.source.path)) for w in read.warnings
    )
    own = read.manifest
    warnings.append(
        ParseWarning(
            source=Location(path=display),
            message=(
                f"no {MANIFEST_NAME} here; the one in {sub.name}/ is used for the files it "
                "lists, its process tree and events (not its title: other evidence lies "
                f"beside it). Tip: pass {sub} alone, or write a {MANIFEST_NAME} here"
            ),
        )
    )
    borrowed = Manifest(
        upstream=own.upstream,
        service=own.service,
        version=own.version,
        world_size=own.world_size,
        events=own.events,
        wedge=own.wedge,
        upstream_ref=own.upstream_ref,
        processes=own.processes,
    )
    return borrowed, entries, prefix


def _side(name: str) -> int | None:
    """0 when a name marks the last good run (`good`, `before`, ...), 1 this run, else None."""
    words = set(_WORD.findall(name.lower()))
    hits = {i for pair in RUN_PAIRS for i, word in enumerate(pair) if word in words}
    return hits.pop() if len(hits) == 1 else None


def _two_runs(root: Path, *, max_file_bytes: int) -> Bundle | None:
    """Two runs of one service side by side in `root`, as this run with its baseline; None
    when the folder does not hold exactly two (evidence beside them: not guessed)."""
    folders = _subfolders(root)
    named: dict[int, list[Path]] = {}
    for folder in folders:
        side = _side(folder.name)
        if side is not None:
            named.setdefault(side, []).append(folder)
    how = ""
    pair: tuple[Path, Path] | None = None
    if len(named.get(0, [])) == 1 and len(named.get(1, [])) == 1:
        pair = (named[0][0], named[1][0])
        how = "told apart by their names"
    elif len(folders) == 2:
        pair = _by_capture_time(folders, max_file_bytes=max_file_bytes)
        how = "told apart by capture time: the earlier is taken as the good one"
    if pair is not None:
        good, bad = pair
        outside = (good.name + "/", bad.name + "/")
        beside = [(rel, path) for rel, path in files.walk(root)[0] if not rel.startswith(outside)]
        # Evidence beside the two runs belongs to neither: not guessed. Notes and anything
        # else that is not evidence (`notes.txt`, a README) leave the comparison alone.
        if any(_is_evidence(path, rel, max_file_bytes) for rel, path in beside):
            return None
        bundle = _load_folder(bad, max_file_bytes=max_file_bytes)
        if bundle.baseline is not None:
            return bundle  # the bad run names its own baseline
        notes = ", ".join(f"`{rel}`" for rel, _ in beside[:3]) + (
            ", ..." if len(beside) > 3 else ""
        )
        aside = f"; {notes} beside them is not evidence" if beside else ""
        return replace(
            bundle,
            baseline=_load_folder(good, max_file_bytes=max_file_bytes),
            baseline_note=(
                f"two runs in one folder ({how}): `{good.name}/` is the last good run, "
                f"`{bad.name}/` this one, compared as `--baseline {good}` would{aside}"
            ),
        )
    return _two_file_sets(root, max_file_bytes=max_file_bytes)


def _is_evidence(path: Path, rel: str, max_file_bytes: int) -> bool:
    """Whether a file beside two runs is evidence: readable text of a kind the sniffer knows."""
    try:
        text = files.read_text(path, display=rel, max_file_bytes=max_file_bytes)
    except EvidenceError:
        return False
    return sniffing.sniff(text) is not EvidenceKind.UNKNOWN


def _two_file_sets(root: Path, *, max_file_bytes: int) -> Bundle | None:
    """Loose files whose names mark two runs (`good.environ`, `environ.bad`), all of them."""
    found, _skipped = files.walk(root)
    sides: dict[int, list[Path]] = {}
    for rel, path in found:
        side = _side(PurePosixPath(rel).name)
        if side is None:
            return None
        sides.setdefault(side, []).append(path)
    if set(sides) != {0, 1}:
        return None
    bundle = _load_files(sides[1], max_file_bytes=max_file_bytes)
    names = ", ".join(f"`{p.name}`" for p in sides[0])
    return replace(
        bundle,
        root=str(root),
        baseline=_load_files(sides[0], max_file_bytes=max_file_bytes),
        baseline_note=(
            f"two runs in one folder (told apart by their file names): {names} is the last "
            "good run, the other files this one, compared as `--baseline` would"
        ),
    )


def _by_capture_time(folders: Sequence[Path], *, max_file_bytes: int) -> tuple[Path, Path] | None:
    """(earlier, later) of two bundle folders whose manifests date their environment
    evidence at least `RUNS_APART_S` apart; None when either is undated or they overlap."""
    spans: list[tuple[datetime, datetime, Path]] = []
    for folder in folders:
        manifest_path = folder / MANIFEST_NAME
        if not manifest_path.is_file():
            return None
        text = files.read_text(
            manifest_path, display=str(manifest_path), max_file_bytes=max_file_bytes
        )
        try:
            read = parse_manifest(text, root=folder, metric_name=metrics.parse_selector)
        except ManifestError:
            return None
        dated = [
            e.captured_at
            for e in read.entries
            if e.captured_at is not None and e.kind in SUMMARISED_KINDS
        ]
        if not dated:
            return None
        spans.append((min(dated), max(dated), folder))
    spans.sort(key=lambda span: span[0])
    (_, first_end, first), (second_start, _, second) = spans
    if (second_start - first_end).total_seconds() < RUNS_APART_S:
        return None
    return first, second


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


def draft_manifest(root: Path) -> str:
    """A commented `bundle.toml` for the evidence found in `root`, for `report init`.

    Every recognised file gets an `[[evidence]]` entry with its sniffed kind; a rank
    read from the file name is suggested in a comment, never asserted.
    """
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
    walked, walk_warnings = files.walk(root)
    skipped.extend(
        f"skipped {w.source.path}: {w.message.removeprefix('skipped: ')}" for w in walk_warnings
    )
    for rel, path in walked:
        try:
            text = files.read_text(path, display=rel, max_file_bytes=DEFAULT_MAX_FILE_BYTES)
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
