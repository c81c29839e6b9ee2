"""The `bundle.toml` that `report collect` writes, rewritten atomically after every step.

`render` (pure) turns a `ManifestState` into TOML that `reporter.bundle.parse_manifest`
reads back; `ManifestWriter` holds the state while the collection runs and saves it
with `reporter.writer.write_atomic`, so the folder is a valid bundle at every moment,
also when the run is interrupted. Besides the keys the loader knows (title, service,
`[fields]`, `[[event]]`, `[wedge]`, `[[evidence]]`), a `[collect]` table records how
the evidence was taken and what was skipped, by example::

    [collect]
    status = "complete"            # running | complete | interrupted | failed
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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from reporter.bundle import MANIFEST_NAME
from reporter.evidence._times import iso
from reporter.model import EvidenceKind
from reporter.writer import write_atomic

# Skips listed one by one in the human summary; the rest are counted.
MAX_SKIPS_SHOWN = 12


class CollectStatus(StrEnum):
    """Where the collection stands."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceEntry:
    """One `[[evidence]]` table."""

    path: str
    kind: EvidenceKind
    captured_at: datetime | None = None
    description: str = ""


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessEntry:
    """A launcher above the targets (`[[collect.process]]`): the process tree that tells
    two servers with identical titles apart. `cmdline` is redacted like env/pidN.cmdline."""

    pid: int
    ppid: int
    pgid: int | None
    cmdline: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EventNote:
    """One `[[event]]` table: a dated line for the report's timeline."""

    at: datetime
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestState:
    """Everything `bundle.toml` says, at one moment of the collection."""

    title: str
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


def toml_str(text: str) -> str:
    """A TOML basic string. JSON's escapes are valid TOML; DEL is the control JSON leaves raw."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007F")


def toml_time(moment: datetime) -> str:
    """A TOML offset date-time in UTC with milliseconds (not a string)."""
    return iso(moment)


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


def render(state: ManifestState) -> str:
    """`bundle.toml` text for `state`; `tomllib` and the bundle loader read it back."""
    lines = [
        "# Evidence bundle written by `report collect`; rewritten after every step, so an",
        "# interrupted collection still leaves a readable bundle. Edit the title and fields freely.",
        f"title = {toml_str(state.title)}",
    ]
    if state.upstream:
        lines.append("upstream = [" + ", ".join(toml_str(u) for u in state.upstream) + "]")
    if state.service:
        lines.append(f"service = {toml_str(state.service)}")
    if state.version:
        lines.append(f"version = {toml_str(state.version)}")
    lines += ["", "[fields]"]
    if state.summary:
        lines.append(f"collection = {toml_str(state.summary)}")
    if state.advice:
        lines.append(f"ptrace = {toml_str(' '.join(state.advice))}")
    if state.skipped:
        lines.append(f"skipped = {toml_str(skipped_text(state.skipped))}")
    if state.wedge_window is not None:
        lines += ["", "[wedge]", f'window = "{state.wedge_window:g}s"']
    for event in state.events:
        lines += ["", "[[event]]", f"at = {toml_time(event.at)}", f"text = {toml_str(event.text)}"]
    # By path: the file order does not depend on which py-spy finished first.
    for entry in sorted(state.evidence, key=lambda e: e.path):
        lines += ["", "[[evidence]]", f"path = {toml_str(entry.path)}", f'kind = "{entry.kind}"']
        if entry.captured_at is not None:
            lines.append(f"captured_at = {toml_time(entry.captured_at)}")
        if entry.description:
            lines.append(f"description = {toml_str(entry.description)}")
    lines += [
        "",
        "[collect]",
        f"status = {toml_str(state.status.value)}",
        f"started_at = {toml_time(state.started_at)}",
    ]
    if state.finished_at is not None:
        lines.append(f"finished_at = {toml_time(state.finished_at)}")
    lines += [
        f"command = {toml_str(state.command)}",
        f"host = {toml_str(state.host)}",
        f"tool = {toml_str(state.tool)}",
    ]
    for key, value in (("pyspy", state.pyspy), ("mode", state.mode), ("ptrace", state.ptrace)):
        if value:
            lines.append(f"{key} = {toml_str(value)}")
    for target in state.targets:
        lines += [
            "",
            "[[collect.target]]",
            f"pid = {target.pid}",
            f"ppid = {target.ppid}",
        ]
        if target.uid is not None:
            lines.append(f"uid = {target.uid}")
        if target.pgid is not None:
            lines.append(f"pgid = {target.pgid}")
        if target.launcher is not None:
            lines.append(f"launcher = {target.launcher}")
        lines += [
            f"title = {toml_str(target.title)}",
            f"selected_by = {toml_str(target.selected_by)}",
        ]
    for proc in state.processes:
        lines += ["", "[[collect.process]]", f"pid = {proc.pid}", f"ppid = {proc.ppid}"]
        if proc.pgid is not None:
            lines.append(f"pgid = {proc.pgid}")
        lines.append(f"cmdline = {toml_str(proc.cmdline)}")
    for skip in state.skipped:
        lines += [
            "",
            "[[collect.skipped]]",
            f"what = {toml_str(skip.what)}",
            f"reason = {toml_str(skip.reason)}",
            f"at = {toml_time(skip.at)}",
        ]
    return "\n".join(lines) + "\n"


@dataclass(slots=True)
class ManifestWriter:
    """The state of a running collection; every change can be saved at once (thread-safe)."""

    root: Path
    state: ManifestState
    _lock: threading.Lock = field(default_factory=threading.Lock)

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
            text = render(self.state)
            # A manifest we cannot read back would make the whole bundle unreadable.
            tomllib.loads(text)
            path = self.root / MANIFEST_NAME
            write_atomic(path, text)
        return path
