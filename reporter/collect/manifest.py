"""The `bundle.toml` that `report collect` writes, rewritten atomically after every step.

`render` (pure) turns a `ManifestState` into TOML that `reporter.load.bundle.parse_manifest`
reads back; `ManifestWriter` holds the state while the collection runs and saves it
with `reporter.core.writer.write_atomic`, so the folder is a valid bundle at every moment,
also when the run is interrupted. Besides the keys the loader knows (title, service,
`[fields]`, `[[event]]`, `[wedge]`, `[[evidence]]`), a `[collect]` table records how
the evidence was taken and what was skipped, by example::

    [collect]
    status = "complete"            # running | complete | incomplete | partial | interrupted | failed
    started_at = 2026-11-29T14:43:41.973Z
    finished_at = 2026-11-29T14:43:52.101Z
    command = "report collect --out b --match 'sglang::scheduler_TP'"
    pyspy = "py-spy 0.4.3"
    mode = "non-blocking"
    ptrace = "uid 0 with CAP_SYS_PTRACE; no Yama (kernel.yama.ptrace_scope absent)"

    [[collect.target]]
    pid = 4711
    ppid = 4700
    uid = 0
    pgid = 4700
    launcher = 4700
    title = "sglang::scheduler_TP0"
    selected_by = "--match"

    [[collect.process]]               # each launcher above the targets
    pid = 4700
    ppid = 4650
    pgid = 4700
    cmdline = "python3 -m sglang.launch_server --tp 2 --port 30000"

    [[collect.remote]]                # each host of `--ssh` / `--exec`, in the order named
    host = "node-b"
    via = "ssh node-b"
    status = "failed"               # complete | incomplete | failed | timeout | interrupted
    reason = "ssh: connect to host node-b port 22: Connection refused"

    [[collect.skipped]]
    what = "environ of PID 4711"
    reason = "/proc/4711/environ holds no variables (...)"
    at = 2026-11-29T14:43:42.001Z

The loader ignores `[collect]`; the human summary of it goes to `[fields]`
(`collection`, `skipped`), which the report shows under "Incident notes".

Many hosts: each finished host's tables are written once to `bundle.d/<host folder>.toml`
(`ManifestWriter.seal`) and `[collect] parts = "bundle.d"` names them; a save then rewrites
only the rest (a few KiB whatever the hosts), and `ManifestWriter.join` writes the one file
at the end. `reporter.load.manifest.parse_manifest` reads a bundle in either form.
"""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from reporter.collect.manifest_files import ManifestFiles, PathFiles
from reporter.collect.outdir import Stamp
from reporter.core.errors import ManifestError, OutputError
from reporter.load.manifest import MANIFEST_NAME, TomlDocument
from reporter.load.parts import MAX_PART_BYTES, PARTS_DIR, join_parts
from reporter.model import EvidenceKind
from reporter.secrets import mask_text

# Skips listed one by one in the human summary; the rest are counted.
MAX_SKIPS_SHOWN = 12


class CollectStatus(StrEnum):
    """Where the collection stands."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    """Finished, but no stack came back from any process it was asked to dump, or nothing
    came back from a URL it was asked to read."""
    PARTIAL = "partial"
    """Finished on several hosts: stacks came back from some, not from others (see
    `[[collect.remote]]`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceEntry:
    """One `[[evidence]]` table."""

    path: str
    kind: EvidenceKind
    captured_at: datetime | None = None
    description: str = ""
    rank: int | None = None
    """Written as `rank = N` (per-rank files of torch's debug server)."""
    host: str = ""
    """Written as `host = "..."`: the remote host the file came from (`--ssh`, `--exec`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkipNote:
    """Something the collection did not get, and why."""

    what: str
    reason: str
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetNote:
    """A process the collection targeted."""

    pid: int
    ppid: int
    uid: int | None
    title: str
    selected_by: str
    pgid: int | None = None
    launcher: int | None = None
    """The nearest ancestor that is not itself a target: the server's or job's launcher."""
    host: str = ""
    """The remote host it runs on; "" on this host."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessEntry:
    """A launcher above the targets (`[[collect.process]]`): the process tree that tells
    two servers with identical titles apart. `cmdline` is redacted like env/pidN.cmdline."""

    pid: int
    ppid: int
    pgid: int | None
    cmdline: str
    host: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteNote:
    """One host of a multi-host collection (`[[collect.remote]]`): how it was reached and what
    came back. `status`: complete, partial (a snapshot not taken), incomplete (reached, no
    stack), failed, timeout, interrupted."""

    host: str
    via: str
    status: str
    reason: str = ""
    hostname: str = ""
    """What the host calls itself (`hostname`), when it answered."""
    targets: int = 0
    dumps: int = 0
    failed_dumps: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class EventNote:
    """One `[[event]]` table: a dated line for the report's timeline."""

    at: datetime
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestState:
    """Everything `bundle.toml` says, at one moment of the collection."""

    title: str
    """The title given with `--title`; "" leaves the report to title itself by its verdict."""
    started_at: datetime
    command: str
    host: str
    tool: str
    service: str = ""
    upstream: tuple[str, ...] = ()
    version: str = ""
    status: CollectStatus = CollectStatus.RUNNING
    finished_at: datetime | None = None
    pyspy: str = ""
    mode: str = ""
    ptrace: str = ""
    limits: str = ""
    """The bounds of every read: the deadline per request and the size cap."""
    wedge_window: float | None = None
    summary: str = ""
    """Human text for `[fields] collection`."""
    advice: tuple[str, ...] = ()
    """What to do about permission problems, for `[fields] ptrace`."""
    targets: tuple[TargetNote, ...] = ()
    processes: tuple[ProcessEntry, ...] = ()
    evidence: tuple[EvidenceEntry, ...] = ()
    skipped: tuple[SkipNote, ...] = ()
    events: tuple[EventNote, ...] = ()
    remotes: tuple[RemoteNote, ...] = ()
    """The hosts of a `--ssh`/`--exec` collection, in the order they were named."""
    label: str = ""
    """What was captured, in a line (`Live capture of 4 processes on gpu-3 (...)`): offered
    as a commented-out title when none was given."""


def skipped_text(skipped: Sequence[SkipNote]) -> str:
    """The human list of skips for `[fields] skipped`: grouped by reason, first seen first."""
    groups: dict[str, list[str]] = {}
    for note in skipped:
        groups.setdefault(note.reason, []).append(note.what)
    parts: list[str] = []
    for reason, whats in list(groups.items())[:MAX_SKIPS_SHOWN]:
        listed = ", ".join(whats[:4]) + (f" and {len(whats) - 4} more" if len(whats) > 4 else "")
        parts.append(f"{listed}: {reason}")
    if len(groups) > MAX_SKIPS_SHOWN:
        parts.append(f"{len(groups) - MAX_SKIPS_SHOWN} more reasons (see [collect] in bundle.toml)")
    return "; ".join(parts)


# The rendered lines of one `[[...]]` table per entry (an `EvidenceEntry`, `TargetNote`,
# `ProcessEntry`, `RemoteNote` or `SkipNote`), each read back on its own once.
Pieces = dict[object, tuple[str, ...]]


def render(
    state: ManifestState,
    pieces: Pieces | None = None,
    *,
    parts: str = "",
    all_skipped: Sequence[SkipNote] | None = None,
    remote_run: bool = False,
) -> str:
    """`bundle.toml` text for `state`; `tomllib` and the bundle loader read it back.

    Free text (titles, command lines, descriptions) is secret-masked: it quotes processes.
    With `pieces` (kept by `ManifestWriter` between saves), each entry's table is rendered
    and read back once and kept there: a rewrite after one more host costs that host's
    entries, not the whole file's (the text is still joined and written in full).
    `parts`: the folder holding the tables `state` leaves out (`[collect] parts`, see
    `ManifestWriter.seal`); `all_skipped`: every skip, for the `[fields]` summary, when
    `state` lists only those not in a part; `remote_run`: a collection from other hosts, also
    when `state` lists none of them (they are in parts).
    """
    m = mask_text
    doc = (
        TomlDocument()
        .comment("Evidence bundle written by `report collect`; rewritten after every step, so an")
        .comment(
            "interrupted collection still leaves a readable bundle. "
            "Edit the title and fields freely."
        )
    )
    unchecked: list[tuple[int, int]] = []  # line ranges not read back as pieces
    begun = 0

    def add(entry: object, build: Callable[[TomlDocument, object], object]) -> None:
        nonlocal begun
        if pieces is None:
            build(doc, entry)
            return
        lines = pieces.get(entry)
        if lines is None:
            one = TomlDocument()
            build(one, entry)
            lines = one.lines()
            tomllib.loads("\n".join(lines))  # a piece we cannot read back is never kept
            pieces[entry] = lines
        at = len(doc)
        unchecked.append((begun, at))
        doc.extend(lines)
        begun = at + len(lines)

    if state.title:
        doc.key("title", m(state.title))
    elif state.label:
        # A generated title would hide the verdict headline the report writes (and become an
        # upstream issue's title): offer it, commented out.
        doc.comment(
            "No --title given: a report of this bundle is titled by its verdict. To name it, "
            "uncomment:"
        ).comment(f"title = {json.dumps(m(state.label), ensure_ascii=False)}")
    if state.upstream:
        doc.key("upstream", list(state.upstream))
    if state.service:
        doc.key("service", state.service)
    if state.version:
        doc.key("version", state.version)
    if not (state.remotes or remote_run) and state.host:
        # Every file was captured here; a remote collection names each file's host instead.
        doc.key("host", state.host)
    doc.table("fields")
    if state.summary:
        doc.key("collection", m(state.summary))
    if state.advice:
        doc.key("ptrace", m(" ".join(state.advice)))
    skipped = state.skipped if all_skipped is None else all_skipped
    if skipped:
        doc.key("skipped", m(skipped_text(skipped)))
    if state.wedge_window is not None:
        doc.table("wedge").key("window", f"{state.wedge_window:g}s")
    for event in state.events:
        doc.array_table("event").key("at", event.at).key("text", m(event.text))
    # By path: the file order does not depend on which py-spy finished first.
    for entry in sorted(state.evidence, key=lambda e: e.path):
        add(entry, _evidence_table)
    doc.table("collect").key("status", state.status.value).key("started_at", state.started_at)
    if state.finished_at is not None:
        doc.key("finished_at", state.finished_at)
    doc.key("command", m(state.command)).key("host", state.host).key("tool", state.tool)
    if parts:
        doc.key("parts", parts)
    for key, value in (
        ("pyspy", state.pyspy),
        ("mode", state.mode),
        ("ptrace", state.ptrace),
        ("limits", state.limits),
    ):
        if value:
            doc.key(key, value)
    for target in state.targets:
        add(target, _target_table)
    for proc in state.processes:
        add(proc, _process_table)
    for remote in state.remotes:
        add(remote, _remote_table)
    for skip in state.skipped:
        add(skip, _skip_table)
    if pieces is None:
        return doc.text()
    unchecked.append((begun, len(doc)))
    return doc.text_of_checked(unchecked)


def _evidence_table(doc: TomlDocument, item: object) -> None:
    assert isinstance(item, EvidenceEntry)
    doc.array_table("evidence").key("path", item.path).key("kind", str(item.kind))
    if item.captured_at is not None:
        doc.key("captured_at", item.captured_at)
    if item.rank is not None:
        doc.key("rank", item.rank)
    if item.host:
        doc.key("host", item.host)
    if item.description:
        doc.key("description", mask_text(item.description))


def _target_table(doc: TomlDocument, item: object) -> None:
    assert isinstance(item, TargetNote)
    doc.array_table("collect.target").key("pid", item.pid).key("ppid", item.ppid)
    if item.uid is not None:
        doc.key("uid", item.uid)
    if item.pgid is not None:
        doc.key("pgid", item.pgid)
    if item.launcher is not None:
        doc.key("launcher", item.launcher)
    if item.host:
        doc.key("host", item.host)
    doc.key("title", mask_text(item.title)).key("selected_by", mask_text(item.selected_by))


def _process_table(doc: TomlDocument, item: object) -> None:
    assert isinstance(item, ProcessEntry)
    doc.array_table("collect.process").key("pid", item.pid).key("ppid", item.ppid)
    if item.pgid is not None:
        doc.key("pgid", item.pgid)
    if item.host:
        doc.key("host", item.host)
    doc.key("cmdline", mask_text(item.cmdline))


def _remote_table(doc: TomlDocument, item: object) -> None:
    assert isinstance(item, RemoteNote)
    doc.array_table("collect.remote").key("host", item.host).key("via", mask_text(item.via))
    doc.key("status", item.status)
    if item.reason:
        doc.key("reason", mask_text(item.reason))
    if item.hostname:
        doc.key("hostname", item.hostname)
    doc.key("targets", item.targets).key("dumps", item.dumps)
    doc.key("failed_dumps", item.failed_dumps).key("seconds", round(item.seconds, 2))


def _skip_table(doc: TomlDocument, item: object) -> None:
    assert isinstance(item, SkipNote)
    doc.array_table("collect.skipped").key("what", mask_text(item.what))
    doc.key("reason", mask_text(item.reason)).key("at", item.at)


# The entry lists `ManifestWriter` keeps as lists (appending to a tuple of n entries copies
# n: 30,000 files one by one would copy 450 million references).
_LISTS = ("evidence", "targets", "processes", "remotes", "skipped")
# What the writer saves beside bundle.toml once someone else changed bundle.toml.
SIDE_NAME = "bundle.collect.toml"


class ManifestWriter:
    """The state of a running collection; every change can be saved at once (thread-safe).

    `seal(host, ...)` moves a finished host's tables out of `bundle.toml` into a part of
    its own (`bundle.d/<host folder>.toml`, written once): every later save rewrites only
    the head, whose size does not grow with the hosts done, and `join()` at the end writes
    one `bundle.toml` of head and parts (the form a person edits; `parse_manifest` reads
    both). The head is never written over a `bundle.toml` someone else changed since
    this writer's last write (its `Stamp` differs): from then on the writer's text goes to
    `bundle.collect.toml` beside it, the parts stay, and `kept_edit` says so.
    """

    def __init__(
        self, root: Path, state: ManifestState, files: ManifestFiles | None = None
    ) -> None:
        self.root = root
        self.files: ManifestFiles = files if files is not None else PathFiles(root)
        self.kept_edit = False
        """bundle.toml was changed by someone else during the run, and kept as they left it."""
        self._lock = threading.Lock()
        self._pieces: Pieces = {}
        self._base = state
        self._lists: dict[str, list[Any]] = {name: list(getattr(state, name)) for name in _LISTS}
        self._unsealed: dict[str, list[Any]] = {n: list(getattr(state, n)) for n in _LISTS}
        """The entries not in a part (what bundle.toml itself lists): a save costs these.
        The files in a part leave memory, so `_lists` and this share one evidence list."""
        self._unsealed["evidence"] = self._lists["evidence"]
        self._view: ManifestState | None = state
        self._sealed: dict[int, object] = {}
        """Entries written to a part, by `id` (the entry is held, so its id stays its own)."""
        self._parts: dict[str, str] = {}
        """Each sealed host's part, in the order sealed."""
        self._part_files: set[str] = set()
        self._written: Stamp | None = None
        self._sealed_files = 0

    @property
    def files_listed(self) -> int:
        """How many files the manifest lists, those in parts included (`state.evidence`
        holds only the ones not in a part)."""
        with self._lock:
            return len(self._lists["evidence"]) + self._sealed_files

    @property
    def state(self) -> ManifestState:
        """Everything listed so far (built once per change); of the files, only those not
        yet in a part (see `files_listed`)."""
        with self._lock:
            return self._state()

    def _state(self) -> ManifestState:
        if self._view is None:
            self._view = _with_lists(self._base, lambda name: tuple(self._lists[name]))
        return self._view

    def update(self, **changes: object) -> None:
        """Replace fields of the state (e.g. `status=`, `summary=`, `remotes=`)."""
        with self._lock:
            for name in _LISTS:
                if name in changes:
                    self._lists[name] = list(changes.pop(name))  # type: ignore[call-overload]
                    sealed = self._sealed
                    self._unsealed[name] = (
                        self._lists[name]
                        if name == "evidence"
                        else [e for e in self._lists[name] if id(e) not in sealed]
                    )
            self._base = replace(self._base, **changes)  # type: ignore[arg-type]
            self._view = None

    def _append(self, name: str, item: object) -> None:
        with self._lock:
            self._lists[name].append(item)
            if name != "evidence":  # one list for both (see `_unsealed`)
                self._unsealed[name].append(item)
            self._view = None

    def add_evidence(self, entry: EvidenceEntry) -> None:
        """List a file that is already written in full."""
        self._append("evidence", entry)

    def add_target(self, note: TargetNote) -> None:
        """List a targeted process (a remote host's, as its records come in)."""
        self._append("targets", note)

    def add_process(self, entry: ProcessEntry) -> None:
        """List a launcher above the targets."""
        self._append("processes", entry)

    def add_remote(self, note: RemoteNote) -> None:
        """List one host's outcome."""
        self._append("remotes", note)

    def replace_evidence(self, entry: EvidenceEntry) -> None:
        """Update the entry with the same path (e.g. the scrape count), or add it."""
        with self._lock:
            listed = self._lists["evidence"]
            at = next((i for i, e in enumerate(listed) if e.path == entry.path), None)
            if at is None:
                listed.append(entry)
            else:
                listed[at] = entry
            self._view = None

    def skip(self, note: SkipNote) -> None:
        """Record something the collection did not get."""
        self._append("skipped", note)

    def event(self, note: EventNote) -> None:
        """Add a timeline entry."""
        with self._lock:
            self._base = replace(self._base, events=(*self._base.events, note))
            self._view = None

    def mark(self) -> int:
        """Where the skip notes stand now: `seal(since=)` takes the ones after it."""
        with self._lock:
            return len(self._lists["skipped"])

    def seal(self, host: str, folder: str, *, since: int) -> None:
        """Write `host`'s tables (those naming it, and the skip notes added after `mark()`
        gave `since`) to `bundle.d/<folder>.toml`, once, and leave them out of every later
        save of the head. A part that cannot be written leaves them in the head."""
        with self._lock:
            taken: list[tuple[object, Callable[[TomlDocument, object], object]]] = []
            for name, build in _BUILDERS:
                listed = self._unsealed[name]
                if name == "skipped":
                    chosen = [e for e in self._lists[name][since:] if id(e) not in self._sealed]
                else:
                    chosen = [e for e in listed if e.host == host]
                if name == "evidence":
                    chosen = sorted(chosen, key=lambda e: e.path)
                taken += [(e, build) for e in chosen]
            if not taken:
                return
            doc = TomlDocument()
            for entry, build in taken:
                build(doc, entry)
            rel = f"{PARTS_DIR}/{folder}.toml"
            while rel in self._part_files:  # a host recorded twice: its first part stays
                rel = f"{PARTS_DIR}/{folder}.{len(self._part_files)}.toml"
            try:
                # Not synced (a sync is ~5 ms a host on a loaded disk): after a power cut a
                # part may be empty, which still reads; its files are then found by walking.
                self.files.write_text(rel, doc.text())
            except OutputError:
                return
            for entry, _build in taken:
                self._pieces.pop(entry, None)
                if not isinstance(entry, EvidenceEntry):
                    self._sealed[id(entry)] = entry
            gone = {id(entry) for entry, _build in taken}
            for name in _LISTS:
                self._unsealed[name] = [e for e in self._unsealed[name] if id(e) not in gone]
            # A host's files are most of what it lists (30 and more): once in the part they
            # leave memory, counted in `files_listed`. Its other notes stay (the summary and
            # the host order need them); they are few.
            self._sealed_files += len(self._lists["evidence"]) - len(self._unsealed["evidence"])
            self._lists["evidence"] = self._unsealed["evidence"]
            self._view = None
            self._parts[f"{host}\n{rel}" if host in self._parts else host] = rel
            self._part_files.add(rel)

    def _head(self) -> ManifestState:
        """The state without the sealed entries (what bundle.toml itself lists)."""
        return _with_lists(self._base, lambda name: tuple(self._unsealed[name]))

    def save(self) -> Path:
        """Write `bundle.toml` (the head, when hosts are in parts) atomically; the text is
        checked to parse first."""
        with self._lock:
            head = self._head()
            if len(self._pieces) > 64 + 2 * _entries(head):
                # Replaced entries leave pieces nobody shows: keep memory to what is listed.
                listed = {*head.evidence, *head.targets, *head.processes, *head.remotes}
                listed.update(head.skipped)
                self._pieces = {k: v for k, v in self._pieces.items() if k in listed}
            # render() reads its text back: an unreadable manifest is never written.
            text = render(
                head,
                self._pieces,
                parts=PARTS_DIR if self._parts else "",
                all_skipped=self._lists["skipped"],
                remote_run=bool(self._lists["remotes"]),
            )
            return self._put(text)

    def join(self) -> Path:
        """The last save: `bundle.toml` as one file, the head and every part in the order
        of the hosts (`remotes`), then the parts removed. Without parts, a plain `save`.
        When bundle.toml was edited by someone else, or the joined text does not read
        back, the parts stay and the head names them (`parse_manifest` joins them)."""
        if not self._parts:
            return self.save()
        with self._lock:
            state = self._state()
            if self._edited():
                return self._put(self._head_text(state))
            head = render(
                replace(self._head(), skipped=()), all_skipped=state.skipped, remote_run=True
            )
            order = [n.host for n in state.remotes if n.host in self._parts]
            rels = [self._parts[h] for h in dict.fromkeys([*order, *self._parts])]
            try:
                texts = [(rel, self.files.read_text(rel, max_bytes=MAX_PART_BYTES)) for rel in rels]
                # The head's own skip notes go last, where render puts skips.
                own = TomlDocument()
                for note in self._head().skipped:
                    _skip_table(own, note)
                if len(own):
                    texts.append(("skips", "\n".join(own.lines()) + "\n"))
                text = join_parts(head, texts)
            except (OutputError, ManifestError):
                return self._put(self._head_text(state))
            path = self._put(text)
            if path.name != MANIFEST_NAME:
                return path  # edited this very moment: the parts stay, the head names them
            for rel in rels:
                self.files.remove(rel)
            self.files.remove_folder(PARTS_DIR)
            self._parts.clear()
            self._part_files.clear()
            return path

    def _head_text(self, state: ManifestState) -> str:
        return render(self._head(), parts=PARTS_DIR, all_skipped=state.skipped, remote_run=True)

    def _edited(self) -> bool:
        """True once bundle.toml is not what this writer wrote last (someone edited it)."""
        if not self.kept_edit and self._written is not None:
            self.kept_edit = self.files.stamp(MANIFEST_NAME) != self._written
        return self.kept_edit

    def _put(self, text: str) -> Path:
        """Write the manifest text to bundle.toml, or beside it once someone edited it."""
        if self._edited():
            self.files.write_synced(SIDE_NAME, text)
            return self.root / SIDE_NAME
        self._written = self.files.write_synced(MANIFEST_NAME, text)
        return self.root / MANIFEST_NAME


def _with_lists(state: ManifestState, listed: Callable[[str], tuple[Any, ...]]) -> ManifestState:
    """`state` with each of `_LISTS` replaced by `listed(name)`."""
    return replace(
        state,
        evidence=listed("evidence"),
        targets=listed("targets"),
        processes=listed("processes"),
        remotes=listed("remotes"),
        skipped=listed("skipped"),
    )


_BUILDERS: tuple[tuple[str, Callable[[TomlDocument, object], object]], ...] = (
    ("evidence", _evidence_table),
    ("targets", _target_table),
    ("processes", _process_table),
    ("remotes", _remote_table),
    ("skipped", _skip_table),
)


def _entries(state: ManifestState) -> int:
    return (
        len(state.evidence)
        + len(state.targets)
        + len(state.processes)
        + len(state.remotes)
        + len(state.skipped)
    )
