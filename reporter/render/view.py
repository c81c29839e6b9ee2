"""Build the `ReportView` the report template lays out: every string pre-formatted, every list pre-sorted.

Input: a `Bundle`, its `Analysis`, evidence excerpts read by the application layer,
and the generation time. Output: a frozen `ReportView` of plain strings and
tuples, so the Jinja template only loops and branches.

The merged tree is drawn two ways. As text, single-child chains stay at one
indent so a 40-frame stack does not march off the page::

    [0-3] <module> (<string>)
    [0-3] spawn_main (multiprocessing/spawn.py)
    ├─ [0-1] check_hicache_events (scheduler.py)
    │  [0-1] all_reduce (torch/distributed/distributed_c10d.py)
    └─ [2-3] on_idle (scheduler.py)

As Mermaid, each single-child chain becomes one node naming its first and last frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from reporter import __version__
from reporter.analysis import Analysis
from reporter.analysis.ranks import format_ranks
from reporter.analysis.ranksets import format_pids
from reporter.analysis.result import RankProcess, TreeNode, Verdict
from reporter.core.text import plural, version_key
from reporter.core.times import clock
from reporter.model import (
    SUMMARISED_KINDS,
    Bundle,
    EventKind,
    Frame,
    TimelineEvent,
)
from reporter.render import answer as answers
from reporter.render import bounds, charts, envview, frview, parts
from reporter.render import evidence as evidence_blocks
from reporter.render import markdown as md
from reporter.render.answer.hosts import multi_host, split_by_host
from reporter.render.answer.scope import instance_name
from reporter.render.answer.series import cite
from reporter.render.parts import Block, located
from reporter.render.policy import LOCAL, final

if TYPE_CHECKING:
    from reporter.render.charts import Chart

# Above this many processes the report embeds one dump per class, not one per process.
MAX_EMBEDDED_DUMPS = 32
# Mermaid diagrams stop being readable (and GitHub slows down) past this many nodes.
MAX_MERMAID_NODES = 60
# Text-tree lines kept in the report; the full tree is in `analyze --json`.
MAX_TREE_LINES = 400


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRow:
    rank: str
    pid: str
    role: str
    title: str
    rank_source: str
    state: str
    snapshots: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedRow:
    rank: str
    pid: str
    reason: str
    where: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HostView:
    """One row of the "Hosts" table."""

    name: str
    ranks: str
    states: str
    failed: str
    capture: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryView:
    """The summary block: the verdict, one line per topic with its evidence, next steps.

    The title above it is the headline; the block never repeats it."""

    verdict: str
    lines: tuple[str, ...]
    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportView:
    """Everything `report.md.j2` shows, already formatted."""

    title: str
    bundle_title: str
    """The manifest's `title` (escaped), shown under the headline; "" without one."""
    generated_at: str
    tool_version: str
    bundle: str
    verdict: str
    confidence: str
    summary: str
    basis: str
    confidence_notes: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]
    python_versions: str
    processes: tuple[ProcessRow, ...]
    others: tuple[ProcessRow, ...]
    cmdlines: str
    classes: tuple[parts.ClassRow, ...]
    branch_shared: str
    branches: tuple[parts.BranchView, ...]
    tree_text: str
    mermaid: str
    thread_groups: tuple[Block, ...]
    idle_threads: tuple[tuple[str, str, str], ...]
    missing_ranks: str
    failed: tuple[FailedRow, ...]
    laggards: str
    signature_hash: str
    signature_text: str
    evidence: tuple[Block, ...]
    evidence_note: str
    warnings: tuple[str, ...]
    metrics: MetricsView | None = None
    """The "Metrics and the wedge" section; None when the bundle has no metrics."""
    timeline: tuple[TimelineRow, ...] = ()
    timeline_note: str = ""
    runtime_environment: envview.RuntimeEnvironmentView | None = None
    """Environment evidence (allowlisted): command lines, key packages, GPUs, variables."""
    changes: envview.ChangesView | None = None
    """The diff against the baseline; None without one."""
    code: envview.CodeSectionView | None = None
    """Code at the branch point, with permalinks."""
    clients: envview.ClientsView | None = None
    """Go client goroutine buckets."""
    summary_block: SummaryView | None = None
    """The answer first: what, who waits for whom, since when, recovery, clients, next steps."""
    class_stacks: tuple[Block, ...] = ()
    evidence_index: tuple[evidence_blocks.IndexRow, ...] = ()
    factors: tuple[str, ...] = ()
    """Contributing factors suggested from the evidence (the reviewer keeps or deletes each)."""
    impact: tuple[str, ...] = ()
    """Impact suggested from the evidence (wedge length, waiting clients)."""
    actions: tuple[str, ...] = ()
    """Action items suggested from the next steps."""
    flight_recorder: frview.FlightRecorderView | None = None
    """The Flight Recorder section (reporter.render.frview); None without traces."""
    evidence_digest: str = ""
    """`Bundle.digest`: the evidence by content, so "seen before" knows this incident again."""
    hosts: tuple[HostView, ...] = ()
    """The "Hosts" table: one row per host of a multi-host bundle; () for one host."""


def build_view(
    bundle: Bundle,
    analysis: Analysis,
    *,
    now: datetime | None = None,
    chart_file: str = "",
    answer: answers.Answer | None = None,
) -> ReportView:
    """Format everything the template needs.

    Evidence files embedded as they are (logs, failed-dump output) come from the heads
    the loader kept (`EvidenceFile.head`). `now` is not shown: a re-draft of the same
    evidence must not change a byte; the header names the evidence's own capture times.
    """
    del now  # kept in the signature for callers; the report shows evidence times only
    ans = answer if answer is not None else answers.build(bundle, analysis)
    unit = analysis.rank_unit
    n_procs = len(analysis.processes)
    basis = (
        f"Based on {plural(analysis.snapshots, 'snapshot')} of "
        f"{plural(n_procs, 'rank') if unit == 'rank' else plural(n_procs, 'process', 'processes')}"
        f"{_spread(analysis)} from {plural(len(bundle.files), 'evidence file')}."
    )
    if not analysis.processes:
        basis = f"Based on {plural(len(bundle.files), 'evidence file')}; no stack dumps."
    notes = tuple(analysis.confidence_notes)
    # One caveat per fact: the one-snapshot caveat is said here unless a note says it.
    # A crash is not a question of stuck or slow: the caveat would only mislead.
    if (
        analysis.snapshots == 1
        and analysis.verdict is not Verdict.CRASHED
        and not any("snapshot" in n for n in notes)
    ):
        basis += " One snapshot cannot tell a stuck rank from a slow one."
    versions = sorted({d.python_version for d in bundle.dumps if d.python_version}, key=version_key)
    # A manifest title is typed by someone: inert like evidence. The derived one is built
    # from escaped parts already.
    # The title is the headline, whatever the manifest is called; a manifest title is typed
    # by someone (inert like evidence) and shown under it. The derived one is built from
    # escaped parts already.
    title = ans.title
    bundle_title = LOCAL.typed(bundle.manifest.title) if bundle.manifest.title else ""
    blocks, index = evidence_blocks.blocks(bundle, analysis)
    summarised = sum(1 for f in bundle.files if f.kind in SUMMARISED_KINDS)
    evidence_note = (
        "Every evidence file of the bundle and where this report shows it. Each process's "
        "dumps appear once, as py-spy text (equal snapshots folded, ranks with the same "
        "stacks as one shown listed under it, `--json` and `--locals` drawn as text, long "
        "files cut with the full file named); the bundle keeps every file whole."
    )
    if summarised:
        evidence_note += " Environment values are allowlisted in their section."
    return ReportView(
        title=title,
        bundle_title=bundle_title,
        generated_at=_evidence_span(bundle, analysis),
        tool_version=__version__,
        bundle=bundle.root or ", ".join(f.path for f in bundle.files),
        verdict=ans.verdict_label,
        confidence=analysis.confidence.value,
        summary=LOCAL.inline(ans.paragraph),
        basis=basis,
        confidence_notes=notes,
        fields=tuple(
            (k.replace("_", " ").capitalize(), LOCAL.typed(v)) for k, v in bundle.manifest.fields
        ),
        python_versions=", ".join(versions) if versions else "not shown in the dumps",
        processes=_process_rows(analysis),
        others=tuple(_process_row(p, bool(analysis.hosts)) for p in analysis.others),
        cmdlines=_cmdlines(analysis),
        classes=parts.class_rows(analysis, LOCAL, instances=bool(analysis.instances)),
        branch_shared=(
            analysis.branch_point.shared.display()
            if analysis.branch_point and analysis.branch_point.shared
            else ""
        ),
        branches=parts.branch_views(analysis.branch_point, lambda _label, f: located(f)),
        tree_text=md.fence(tree_text(analysis.tree)),
        mermaid=md.fence(mermaid(analysis.tree), "mermaid") if analysis.tree.children else "",
        thread_groups=tuple(
            Block(title=g.name, text=tree_text(g.tree)) for g in analysis.thread_groups
        ),
        idle_threads=tuple(
            (md.cell(t.thread_name), t.label, md.cell(t.why)) for t in analysis.idle_threads
        ),
        missing_ranks=_ranks_text(analysis.missing_ranks),
        failed=tuple(
            FailedRow(
                rank=str(f.rank) if f.rank is not None else "?",
                pid=str(f.failure.pid) if f.failure.pid is not None else "?",
                reason=md.cell(f.failure.reason),
                where=md.cell(str(f.failure.source)),
            )
            for f in analysis.failed
        ),
        laggards=_ranks_text(analysis.laggards),
        hosts=tuple(
            HostView(
                name=md.code_cell(h.name),
                ranks=h.label or "-",
                states=", ".join(f"{n} {state}" for state, n in h.states) or "-",
                failed=str(h.failed_dumps) if h.failed_dumps else "-",
                capture=md.cell(f"{h.status}: {h.reason}" if h.reason else h.status),
            )
            for h in analysis.hosts
        ),
        signature_hash=analysis.signature.hash,
        signature_text=md.fence(analysis.signature.text),
        evidence=tuple(replace(b, title=md.summary_text(final(b.title))) for b in blocks),
        evidence_note=evidence_note,
        warnings=tuple(analysis.warnings),
        metrics=metrics_view(analysis, chart_file=chart_file, bundle=bundle),
        timeline=timeline_rows(analysis.timeline, bundle=bundle),
        timeline_note=timeline_note(analysis.timeline),
        runtime_environment=envview.runtime_environment(analysis.environment),
        changes=envview.changes(analysis.diff),
        code=envview.code_section(analysis.excerpts),
        clients=envview.clients(analysis.goroutines, analysis.clients_sentence),
        summary_block=summary_view(ans, analysis),
        class_stacks=class_stacks(analysis),
        evidence_index=_index_rows(index),
        factors=tuple(LOCAL.inline(f) for f in ans.factors),
        impact=tuple(LOCAL.inline(i) for i in ans.impact),
        actions=tuple(LOCAL.inline(a) for a in ans.actions),
        flight_recorder=frview.flight_recorder_view(analysis.flight_recorder),
        evidence_digest=bundle.digest,
    )


def _sources(sources: Sequence[str]) -> str:
    return f" ({', '.join(md.code(s) for s in sources)})" if sources else ""


def summary_view(ans: answers.Answer, analysis: Analysis) -> SummaryView:
    """The summary block: the verdict, one bullet per topic with its sources, the next steps."""
    verdict = f"Verdict: **{ans.verdict_label}**, confidence {analysis.confidence.value}."
    lines = tuple(
        f"**{line.topic}:** {LOCAL.inline(line.text)}{_sources(line.sources)}" for line in ans.lines
    )
    steps = tuple(
        f"{LOCAL.inline(step.action)} _Why:_ {LOCAL.inline(step.why)}" for step in ans.steps[:4]
    )
    return SummaryView(verdict=verdict, lines=lines, steps=steps)


def _spread(analysis: Analysis) -> str:
    """` in 2 instances of 2 each`, ` on 2 hosts (node-a: 2, node-b: not captured)`: what
    the count is made of; "" for one of each."""
    out = ""
    if len(analysis.instances) > 1:
        sizes = [
            sum(1 for p in analysis.processes if p.identity.instance == i.id)
            for i in analysis.instances
        ]
        each = (
            f" of {sizes[0]} each"
            if len(set(sizes)) == 1
            else f" ({', '.join(map(str, sizes[:-1]))} and {sizes[-1]})"
        )
        out += f" in {len(analysis.instances)} instances{each}"
    if multi_host(analysis):
        hosts = ", ".join(
            f"{r.name}: not captured" if r.missing else f"{r.name}: {len(r.pids)}"
            for r in analysis.hosts
        )
        out += f" on {plural(len(analysis.hosts), 'host')} ({hosts})"
    return out


def _evidence_span(bundle: Bundle, analysis: Analysis) -> str:
    """When the evidence was captured, from the evidence itself (stable across re-drafts):
    from the first dated entry to the last dump."""
    # The timeline dates a cluster of dumps by its first one: the dumps themselves (and
    # the Go dumps) say when the last one was taken.
    times = sorted(
        {
            *(e.at for e in analysis.timeline),
            *(d.captured_at for d in bundle.dumps if d.captured_at is not None),
            *(g.captured_at for g in bundle.goroutine_dumps if g.captured_at is not None),
        }
    )
    if not times:
        return ""
    first, last = times[0], times[-1]
    start, end = clock(first)[:8], clock(last)[:8]
    if first.date() == last.date():
        return (
            f"{first:%Y-%m-%d} {start} UTC"
            if start == end
            else (f"{first:%Y-%m-%d} {start} to {end} UTC")
        )
    return f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"


# Frames shown per class before the outer frames all classes share.
MAX_CLASS_FRAMES = 30


def class_stacks(analysis: Analysis) -> tuple[Block, ...]:
    """One minimal stack per class, innermost first, with line numbers.

    Frames below the point where every class agrees (the common outer part, shown once
    under Merged stacks) are left out but for the first; frames on this class's side of
    the branch point are marked `>`.
    """
    classes = analysis.classes
    if not classes:
        return ()
    keys = [[(f.function, f.file) for f in reversed(c.frames)] for c in classes]
    common = 0
    if len(classes) > 1:
        while all(len(k) > common for k in keys) and len({k[common] for k in keys}) == 1:
            common += 1
    branches = {
        b.label: {(f.function, f.file, f.line) for f in b.frames}
        for b in (analysis.branch_point.branches if analysis.branch_point else ())
    }
    # Ranks are numbered within an instance: with several, each heading names its own.
    names = (
        {i.id: instance_name(i) for i in analysis.instances} if len(analysis.instances) > 1 else {}
    )
    out: list[Block] = []
    for stack_class in classes:
        frames = stack_class.frames
        keep = len(frames) - max(common - 1, 0)
        shown = frames[: min(keep, MAX_CLASS_FRAMES)]
        marked = branches.get(stack_class.label, set())
        lines = [
            ("> " if (f.function, f.file, f.line) in marked else "  ") + located(f) for f in shown
        ]
        hidden = len(frames) - len(shown)
        if hidden:
            lines.append(f"  … {hidden} outer frames shared by every class (see Merged stacks)")
        what = stack_class.collective or (
            f"wait: {stack_class.wait}" if stack_class.wait else "no collective"
        )
        ranks = "rank" if len(stack_class.ranks) == 1 else "ranks"
        label = stack_class.label
        if analysis.rank_unit != "rank":
            ranks = "PID" if len(stack_class.pids) == 1 else "PIDs"
            # Listed: `[8261-8262]` would read as every PID between.
            label = format_pids(stack_class.pids) if stack_class.pids else label
        owner = names.get(stack_class.instance, "")
        where = split_by_host(analysis, stack_class.ranks, stack_class.instance)
        out.append(
            Block(
                title=f"{owner + ', ' if owner else ''}{ranks} {label}{where}: "
                f"{stack_class.state.value}, {what}",
                text="\n".join(lines),
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartView:
    """One chart: a fenced Mermaid block and the sentence under it."""

    block: str
    caption: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsView:
    """The metrics section: verdict paragraph, charts, signals table, step changes, notes."""

    verdict: str
    charts: tuple[ChartView, ...]
    drawn: tuple[Chart, ...]
    """The chart data the blocks above and the SVG file beside the report are both made from."""
    svg_note: str
    signals: tuple[parts.SignalRow, ...]
    steps: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineRow:
    """One timeline entry, pre-formatted: `at` is the UTC time, `source` is `file:line`."""

    at: str
    kind: str
    text: str
    source: str


# Timeline entries shown in the report; `analyze --json` has all of them.
MAX_TIMELINE_ROWS = 120
# Evidence text (log lines, operator notes) is quoted as code: it may hold anything.
_QUOTED_KINDS = frozenset({"log", "manual", "service", "goroutines"})


def metrics_view(
    analysis: Analysis, *, chart_file: str = "", bundle: Bundle | None = None
) -> MetricsView | None:
    """The metrics section of the report, or None when the bundle has no metric history.

    With the `bundle`, step changes cite their sample by series and time (a line of a
    one-line `query_range` answer points nowhere)."""
    wedge = analysis.wedge
    if wedge is None:
        return None
    built = charts.build(wedge)
    svg_note = ""
    if built and chart_file:
        svg_note = (
            f"The same charts as one SVG file for offline viewing: {md.code(chart_file)}, "
            "written beside this report."
        )
    return MetricsView(
        verdict=LOCAL.prose(wedge.summary),
        charts=tuple(
            ChartView(block=md.fence(c.mermaid, "mermaid"), caption=LOCAL.prose(c.caption))
            for c in built
        ),
        drawn=built,
        svg_note=svg_note,
        signals=tuple(parts.signal_row(s, wedge) for s in wedge.signals),
        steps=tuple(
            f"{LOCAL.prose(s.text)} "
            f"({md.code(cite(bundle, s.source, s.series, s.sampled_at) if bundle else str(s.source))})"
            for s in wedge.steps
        ),
        notes=tuple(LOCAL.prose(n) for n in wedge.notes),
    )


def timeline_rows(
    events: Sequence[TimelineEvent], *, bundle: Bundle | None = None
) -> tuple[TimelineRow, ...]:
    """The first `MAX_TIMELINE_ROWS` entries; the time without the date when all share one day.

    A timeline of dump captures alone says nothing the evidence list does not: then ().
    With the `bundle`, an entry from a `query_range` answer cites the file without a line
    (its lines hold whole series; the row's time and text say which sample).
    """
    whole = {
        f.path
        for f in (bundle.files if bundle is not None else ())
        if f.kind.value == "prometheus-json"
    }
    if all(e.kind in (EventKind.DUMP, EventKind.DUMP_FAILED) for e in events):
        return ()
    days = {e.at.date() for e in events}
    rows = []
    for event in events[:MAX_TIMELINE_ROWS]:
        stamp = clock(event.at) if len(days) == 1 else f"{event.at:%Y-%m-%d} {clock(event.at)}"
        kind = event.kind.value
        text = (
            md.code(" ".join(event.text.split()))
            if kind in _QUOTED_KINDS
            else LOCAL.prose(event.text)
        )
        source = event.source.path if event.source.path in whole else str(event.source)
        rows.append(TimelineRow(at=stamp, kind=kind, text=text, source=md.code(source)))
    return tuple(rows)


def timeline_note(events: Sequence[TimelineEvent]) -> str:
    """The sentence above the timeline: time zone, day, and how many entries are left out."""
    if not events:
        return ""
    days = sorted({e.at.date() for e in events})
    note = f"All times UTC, on {days[0]:%Y-%m-%d}." if len(days) == 1 else "All times UTC."
    if len(events) > MAX_TIMELINE_ROWS:
        note += (
            f" The first {MAX_TIMELINE_ROWS} of {len(events)} entries; "
            "`report analyze --json` lists them all."
        )
    return note


def _default_title(analysis: Analysis) -> str:
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    what = f" in {', '.join(collectives)}" if collectives else ""
    return f"Hang: {analysis.verdict.value}{what}"


def _ranks_text(ranks: Sequence[int]) -> str:
    return format_ranks(ranks) if ranks else ""


def _process_rows(analysis: Analysis) -> tuple[ProcessRow, ...]:
    """The environment table's rows: every rank, or past `bounds.MAX_SHOWN` the ranks whose
    dumps are drawn and one row counting the rest."""
    hosts = bool(analysis.hosts)
    drawn, left = bounds.shown_processes(analysis, analysis.processes)
    rows = [_process_row(p, hosts) for p in drawn]
    if left:
        rows.append(
            ProcessRow(
                rank="…",
                pid="",
                role="",
                title=md.cell(bounds.left_out_line(left, "this table")),
                rank_source="",
                state="",
                snapshots=sum(len(p.snapshots) for p in left),
            )
        )
    return tuple(rows)


def _index_rows(
    index: Sequence[evidence_blocks.IndexRow],
) -> tuple[evidence_blocks.IndexRow, ...]:
    """The evidence index as drawn: a row per file, or past `bounds.MAX_INDEX_ROWS` files a row
    per run of files alike (first and last named, and how many)."""
    if len(index) <= bounds.MAX_INDEX_ROWS:
        return tuple(
            evidence_blocks.IndexRow(path=md.code_cell(r.path), kind=r.kind, shown=md.cell(r.shown))
            for r in index
        )
    rows = []
    for first, last, count, kind, shown in bounds.grouped_index(
        [(r.path, r.kind, r.shown) for r in index]
    ):
        path = md.code_cell(first)
        if count > 1:
            path = f"{path} to {md.code_cell(last)} ({count} files)"
        rows.append(evidence_blocks.IndexRow(path=path, kind=kind, shown=md.cell(shown)))
    return tuple(rows)


def _process_row(process: RankProcess, hosts: bool = False) -> ProcessRow:
    ident = process.identity
    latest = process.snapshots[-1] if process.snapshots else None
    title = ident.title or (latest.cmdline if latest and latest.cmdline else "")
    pid = str(ident.pid) if ident.pid is not None else "?"
    return ProcessRow(
        rank=str(ident.rank) if ident.rank is not None else "-",
        # Several hosts: a PID alone does not name a process.
        pid=md.cell(f"{pid} on {ident.host}") if hosts and ident.host else pid,
        role=md.cell(ident.role or ""),
        title=md.code_cell(_shorten(title, 100)),
        rank_source=md.cell(
            f"{ident.source.value}: {ident.detail}" if ident.detail else ident.source.value
        ),
        state=process.state.value,
        snapshots=len(process.snapshots),
    )


def _cmdlines(analysis: Analysis) -> str:
    """Distinct command lines seen in the dumps, each once, for the environment section."""
    seen: dict[str, None] = {}
    for process in (*analysis.processes, *analysis.others):
        for dump in process.snapshots:
            for line in (dump.cmdline, dump.parent_cmdline):
                if line:
                    seen.setdefault(line, None)
    return md.fence("\n".join(bounds.command_lines(list(seen)))) if seen else ""


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _frame_text(frame: Frame | None) -> str:
    return "(all)" if frame is None else f"{frame.function} ({frame.short_file})"


def tree_text(root: TreeNode) -> str:
    """Draw the merged tree as text; single-child chains keep one indent level.

    Iterative (an explicit stack): a tree is as deep as the deepest stack.
    """
    lines: list[str] = []
    # (node, prefix of its chain's lines, prefix of its first line), depth first.
    starts = root.children if root.frame is None else (root,)
    pending = [(start, "", "") for start in reversed(starts)]
    while pending and len(lines) < MAX_TREE_LINES:
        current, prefix, first_prefix = pending.pop()
        lead = first_prefix
        # Follow the single-child chain at this indent, then fan out with box-drawing.
        while True:
            if len(lines) >= MAX_TREE_LINES:
                break
            lines.append(f"{lead}{current.label} {_frame_text(current.frame)}")
            lead = prefix
            if len(current.children) != 1:
                break
            current = current.children[0]
        count = len(current.children)
        for index in range(count - 1, -1, -1):
            last = index == count - 1
            pending.append(
                (
                    current.children[index],
                    prefix + ("   " if last else "│  "),
                    prefix + ("└─ " if last else "├─ "),
                )
            )
    if len(lines) >= MAX_TREE_LINES:
        lines.append(f"… tree cut at {MAX_TREE_LINES} lines; `report analyze --json` has it whole")
    return "\n".join(lines)


def mermaid(root: TreeNode) -> str:
    """A Mermaid flowchart of the merged tree; each single-child chain is one node.

    Iterative, depth first (node names follow the recursive order it replaced).
    """
    out = ["flowchart TD"]
    counter = 0
    truncated = False
    starts = root.children if root.frame is None else (root,)
    pending: list[tuple[TreeNode, str | None]] = [(start, None) for start in reversed(starts)]
    while pending:
        node, parent = pending.pop()
        if counter >= MAX_MERMAID_NODES:
            truncated = True
            break
        nodes = [node]
        while len(nodes[-1].children) == 1:
            nodes.append(nodes[-1].children[0])
        last = nodes[-1]
        name = f"n{counter}"
        counter += 1
        first = nodes[0]
        if len(nodes) == 1:
            text = f"{first.label} {_frame_text(first.frame)}"
        else:
            text = (
                f"{first.label} {_frame_text(first.frame)} … "
                f"({len(nodes) - 2} more) … {_frame_text(last.frame)}"
                if len(nodes) > 2
                else f"{first.label} {_frame_text(first.frame)} → {_frame_text(last.frame)}"
            )
        out.append(f"  {name}[{md.mermaid_label(text)}]")
        if parent is not None:
            out.append(f"  {parent} --> {name}")
        pending.extend((child, name) for child in reversed(last.children))
    if truncated:
        out.append(f'  more["… more branches than {MAX_MERMAID_NODES} nodes; see the text tree"]')
    return "\n".join(out)
