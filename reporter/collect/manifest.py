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
"""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from reporter.core.writer import write_atomic
from reporter.load.manifest import MANIFEST_NAME, TomlDocument
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


def render(state: ManifestState, pieces: Pieces | None = None) -> str:
    """`bundle.toml` text for `state`; `tomllib` and the bundle loader read it back.

    Free text (titles, command lines, descriptions) is secret-masked: it quotes processes.
    With `pieces` (kept by `ManifestWriter` between saves), each entry's table is rendered
    and read back once and kept there: a rewrite after one more host costs that host's
    entries, not the whole file's (the text is still joined and written in full).
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
    if not state.remotes and state.host:
        # Every file was captured here; a remote collection names each file's host instead.
        doc.key("host", state.host)
    doc.table("fields")
    if state.summary:
        doc.key("collection", m(state.summary))
    if state.advice:
        doc.key("ptrace", m(" ".join(state.advice)))
    if state.skipped:
        doc.key("skipped", m(skipped_text(state.skipped)))
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


@dataclass(slots=True)
class ManifestWriter:
    """The state of a running collection; every change can be saved at once (thread-safe)."""

    root: Path
    state: ManifestState
    sink: Callable[[str, str], None] | None = None
    """Writes `bundle.toml` (name, text) inside the held `--out` (`outdir.OutDir`); by
    default `write_atomic` under `root`."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pieces: Pieces = field(default_factory=dict)

    def update(self, **changes: object) -> None:
        """Replace fields of the state (e.g. `status=`, `summary=`)."""
        with self._lock:
            self.state = replace(self.state, **changes)  # type: ignore[arg-type]

    def add_evidence(self, entry: EvidenceEntry) -> None:
        """List a file that is already written in full."""
        with self._lock:
            self.state = replace(self.state, evidence=(*self.state.evidence, entry))

    def replace_evidence(self, entry: EvidenceEntry) -> None:
        """Update the entry with the same path (e.g. the scrape count), or add it."""
        with self._lock:
            kept = tuple(e for e in self.state.evidence if e.path != entry.path)
            if len(kept) == len(self.state.evidence):
                self.state = replace(self.state, evidence=(*kept, entry))
            else:
                self.state = replace(
                    self.state,
                    evidence=tuple(
                        entry if e.path == entry.path else e for e in self.state.evidence
                    ),
                )

    def skip(self, note: SkipNote) -> None:
        """Record something the collection did not get."""
        with self._lock:
            self.state = replace(self.state, skipped=(*self.state.skipped, note))

    def event(self, note: EventNote) -> None:
        """Add a timeline entry."""
        with self._lock:
            self.state = replace(self.state, events=(*self.state.events, note))

    def save(self) -> Path:
        """Write `bundle.toml` atomically; the text is checked to parse first."""
        with self._lock:
            # render() reads its text back: an unreadable manifest is never written.
            state = self.state
            if len(self._pieces) > 64 + 2 * _entries(state):
                # Replaced entries leave pieces nobody shows: keep memory to what is listed.
                listed = {*state.evidence, *state.targets, *state.processes, *state.remotes}
                listed.update(state.skipped)
                self._pieces = {k: v for k, v in self._pieces.items() if k in listed}
            text = render(state, self._pieces)
            path = self.root / MANIFEST_NAME
            if self.sink is not None:
                self.sink(MANIFEST_NAME, text)
            else:
                write_atomic(path, text)
        return path


def _entries(state: ManifestState) -> int:
    return (
        len(state.evidence)
        + len(state.targets)
        + len(state.processes)
        + len(state.remotes)
        + len(state.skipped)
    )
