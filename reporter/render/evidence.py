"""The report's evidence section without the noise: each process's dumps once, as py-spy text.

Input: the `Analysis` (its processes and their snapshots, parsed from any dump form:
py-spy text, `--json`, `--locals`, faulthandler), the bundle's file list, and the heads
of the files that are not dumps (logs, failed-dump output), kept by the loader
(`EvidenceFile.head`). Output: `Block`s and an index row per evidence file, so every
file of the bundle is named in the report.

Snapshots of one process whose stacks are equal (same threads, functions, files and
lines) are folded into one rendering that names every file it stands for; `--json`
and `--locals` dumps are drawn as py-spy text, their locals as `name = repr` lines.
A rendering is cut at `MAX_DUMP_LINES` lines and names the full file; native frame
names longer than `MAX_FRAME_CHARS` are shortened (the bundle keeps them whole)::

    PID 26038 (rank 0, sglang::scheduler_TP0), Python 3.11.7
    snapshots/rank0_s0.txt:1, snapshots/rank0_s1.txt:1, json/rank0.json:1: identical
    Thread 26038 (idle): "MainThread"
        all_reduce (torch/distributed/distributed_c10d.py:3252)
        ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.ranks import format_ranks
from reporter.analysis.result import Analysis, RankProcess
from reporter.core.text import version_key
from reporter.evidence import kinds
from reporter.model import (
    DUMP_KINDS,
    HEAD_LINES,
    METRIC_KINDS,
    PROC_KINDS,
    SUMMARISED_KINDS,
    Bundle,
    EvidenceFile,
    Frame,
    ProcessDump,
    ThreadStack,
)
from reporter.render import bounds
from reporter.render.parts import Block

# Lines of one process's rendered dumps; the bundle keeps the whole files.
MAX_DUMP_LINES = 60
# Lines of a log or other raw file embedded in the report: all the loader keeps.
MAX_RAW_LINES = HEAD_LINES
# Longer native (C/C++) frame names are cut; long template names say nothing at a glance.
MAX_FRAME_CHARS = 110
# Locals are shown for the innermost frames of each thread only (where a thread waits),
# at most so many per frame, each repr cut; the `--locals` file has them all.
LOCALS_FRAMES = 3
MAX_LOCALS = 6
MAX_REPR_CHARS = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexRow:
    """One evidence file and where the report shows it."""

    path: str
    kind: str
    shown: str


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _frame_line(frame: Frame) -> str:
    name = _shorten(frame.function, MAX_FRAME_CHARS) if frame.native else frame.function
    place = f"{frame.file}:{frame.line}" if frame.line is not None else frame.file
    return f"    {name} ({place})"


def _thread_lines(thread: ThreadStack) -> list[str]:
    status = f" ({thread.status.value})" if thread.status.value != "unknown" else ""
    name = f' "{thread.name}"' if thread.name else ""
    lines = [f"Thread {thread.thread_id}{status}:{name}"]
    for depth, frame in enumerate(thread.frames):
        lines.append(_frame_line(frame))
        if frame.locals and depth < LOCALS_FRAMES:
            args = [loc for loc in frame.locals if loc.is_arg]
            rest = [loc for loc in frame.locals if not loc.is_arg]
            for title, group in (("Arguments", args), ("Locals", rest)):
                if not group:
                    continue
                lines.append(f"        {title}:")
                for loc in group[:MAX_LOCALS]:
                    lines.append(f"            {loc.name}: {_shorten(loc.repr, MAX_REPR_CHARS)}")
                if len(group) > MAX_LOCALS:
                    lines.append(f"            … {len(group) - MAX_LOCALS} more")
    if thread.truncated:
        lines.append("    … (the dump was truncated here)")
    return lines


def _key(dump: ProcessDump) -> tuple[object, ...]:
    """What makes two snapshots the same picture: every thread's frames (locals ignored)."""
    return tuple(
        # `--json` gives pthread ids where text gives native ids: compare by name.
        (t.name or t.thread_id, tuple((f.short_function, f.short_file, f.line) for f in t.frames))
        for t in dump.threads
    )


def _richest(dumps: Sequence[ProcessDump]) -> ProcessDump:
    """Of equal snapshots, the one with locals (it says the most), else the first."""
    return max(dumps, key=lambda d: sum(1 for t in d.threads for f in t.frames if f.locals))


def _who(process: RankProcess) -> str:
    ident = process.identity
    return f"rank {ident.rank}" if ident.rank is not None else (ident.role or "process")


def _heading(process: RankProcess) -> str:
    ident = process.identity
    who = _who(process)
    pid = f"PID {ident.pid}" if ident.pid is not None else "PID ?"
    title = f", {ident.title}" if ident.title else ""
    versions = sorted(
        {d.python_version for d in process.snapshots if d.python_version}, key=version_key
    )
    python = f", Python {versions[-1]}" if versions else ""
    return f"{pid} ({who}{title}){python}"


def process_block(process: RankProcess) -> Block:
    """One process's snapshots as py-spy text, equal snapshots folded, cut at `MAX_DUMP_LINES`."""
    groups: dict[tuple[object, ...], list[ProcessDump]] = {}
    for dump in process.snapshots:
        groups.setdefault(_key(dump), []).append(dump)
    lines = [_heading(process)]
    for members in groups.values():
        where = ", ".join(str(d.source) for d in members)
        same = ": identical" if len(members) > 1 else ""
        lines.append(f"# {where}{same}")
        shown = _richest(members)
        for thread in shown.threads:
            lines.extend(_thread_lines(thread))
    files = list(dict.fromkeys(d.source.path for d in process.snapshots))
    if len(lines) > MAX_DUMP_LINES:
        more = len(lines) - MAX_DUMP_LINES
        lines = lines[:MAX_DUMP_LINES]
        lines.append(f"… {more} more lines; the full dumps: {', '.join(files)}")
    ident = process.identity
    distinct = len(groups)
    title = (
        f"{_who(process)}, PID {ident.pid if ident.pid is not None else '?'}: "
        f"{len(process.snapshots)} snapshot{'s' if len(process.snapshots) != 1 else ''}"
        f", {distinct} distinct"
    )
    return Block(title=title, text="\n".join(lines))


def raw_block(item: EvidenceFile) -> Block:
    """A non-dump file (log, failed-dump output) as the loader kept it: its first
    `MAX_RAW_LINES` lines, then how many more lines the bundle's file has."""
    cut = ""
    if item.lines > MAX_RAW_LINES:
        cut = f"\n… {item.lines - MAX_RAW_LINES} more lines in {item.path}"
    return Block(title=f"{item.path} ({item.kind.value})", text=item.head + cut)


def raw_paths(bundle: Bundle) -> tuple[str, ...]:
    """The files embedded raw: neither metrics, nor summarised, nor parsed dumps."""
    dumped = {d.source.path for d in bundle.dumps}
    return tuple(
        f.path
        for f in bundle.files
        if f.kind not in METRIC_KINDS
        and f.kind not in SUMMARISED_KINDS
        and f.kind not in PROC_KINDS
        and not (f.kind in DUMP_KINDS and f.path in dumped)
    )


def _picture(process: RankProcess) -> tuple[object, ...]:
    """The distinct stacks of a process, in order: equal for ranks that show the same thing."""
    return tuple(dict.fromkeys(_key(d) for d in process.snapshots))


def same_as_block(first: RankProcess, alike: Sequence[RankProcess]) -> Block:
    """Processes whose stacks equal `first`'s (shown above): one line each, naming their files.

    Ranks of one class usually differ only in PIDs, thread ids, addresses and locals'
    reprs; drawing each again hides the one rank that differs among eight that do not.
    """
    lines = [
        f"The same threads, functions and lines as {_who(first)} (PID {first.identity.pid}) "
        "above; thread ids, addresses and locals differ and are in the files:"
    ]
    for process in alike:
        files = ", ".join(dict.fromkeys(str(d.source) for d in process.snapshots))
        lines.append(f"{_heading(process)}: {files}")
    ranks = [p.identity.rank for p in alike if p.identity.rank is not None]
    if len(ranks) == len(alike):
        who = f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}"
    else:
        who = ", ".join(_who(p) for p in alike)
    title = f"{who}: the same stacks as {_who(first)}"
    return Block(title=title, text="\n".join(lines))


def process_blocks(processes: Sequence[RankProcess]) -> list[Block]:
    """A block per process, but processes with the same stacks as an earlier one share a block."""
    firsts: dict[tuple[object, ...], RankProcess] = {}
    alike: dict[tuple[object, ...], list[RankProcess]] = {}
    order: list[tuple[str, tuple[object, ...]]] = []
    for process in processes:
        picture = _picture(process)
        if picture in firsts:
            if not alike.setdefault(picture, []):
                order.append(("same", picture))
            alike[picture].append(process)
        else:
            firsts[picture] = process
            order.append(("first", picture))
    return [
        process_block(firsts[picture])
        if kind == "first"
        else same_as_block(firsts[picture], alike[picture])
        for kind, picture in order
    ]


# What the index says of a file whose dumps are left out of a bounded report.
_LEFT_OUT = "kept in the bundle (its class is drawn above)"


def blocks(bundle: Bundle, analysis: Analysis) -> tuple[tuple[Block, ...], tuple[IndexRow, ...]]:
    """The evidence blocks (processes, then raw files) and the index of every evidence file."""
    drawn, left = bounds.shown_processes(
        analysis, [p for p in (*analysis.processes, *analysis.others) if p.snapshots]
    )
    out = process_blocks(drawn)
    shown_in: dict[str, str] = {}
    if left:
        out.append(
            Block(
                title=f"{len(left)} more processes: their dumps are in the bundle",
                text=bounds.left_out_line(left, "these dumps"),
            )
        )
        for process in left:
            for dump in process.snapshots:
                shown_in.setdefault(dump.source.path, _LEFT_OUT)
    for process in (*analysis.processes, *analysis.others):
        ident = process.identity
        who = f"rank {ident.rank}" if ident.rank is not None else f"PID {ident.pid}"
        for dump in process.snapshots:
            if shown_in.get(dump.source.path) == _LEFT_OUT:
                continue
            shown_in.setdefault(dump.source.path, f"dumps of {who}")
            if f"dumps of {who}" not in shown_in[dump.source.path]:
                shown_in[dump.source.path] += f", {who}"
    raw = set(raw_paths(bundle))
    for item in bundle.files:
        if item.path in raw and item.lines:
            out.append(raw_block(item))
            shown_in.setdefault(item.path, "as text below")
    rows = []
    for f in bundle.files:
        if f.path in shown_in:
            shown = shown_in[f.path]
        elif f.kind in METRIC_KINDS:
            shown = "charted under Metrics and the wedge"
        elif kinds.ENTRIES[f.kind].shown:
            shown = kinds.ENTRIES[f.kind].shown
        elif f.kind in SUMMARISED_KINDS:
            shown = "summarised under Runtime environment (allowlisted)"
        else:
            shown = "kept in the bundle"
        rows.append(IndexRow(path=f.path, kind=f.kind.value, shown=shown))
    return tuple(out), tuple(rows)
