"""The analysis pipeline: `Bundle` in, `Analysis` out.

Steps: identify ranks and their snapshots (ranks.py), intern every main
stack and the latest snapshot's other threads (stacks.py), per-rank states
(progress.py), classes and trees (merge.py), the verdict (verdict.py),
branch point (branch.py), confidence and summary (explain.py) and the
signature (signature.py); then the metric history's wedge (wedge.py), the Go
clients (goroutines.py), the timeline of everything dated (timeline.py), and the
environment, baseline diff and code excerpts (surroundings.py). Pure: no I/O,
deterministic output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reporter.analysis import surroundings
from reporter.analysis.branch import branch_point
from reporter.analysis.classify import default_classifier
from reporter.analysis.explain import Context, confidence, summary
from reporter.analysis.merge import Member, ThreadSample, build_tree, split_threads, stack_classes
from reporter.analysis.progress import UnitView, rank_state
from reporter.analysis.ranks import RankedProcess, identify, main_thread
from reporter.analysis.result import (
    Analysis,
    RankIdentity,
    RankProcess,
    Similarity,
    StackClass,
    Verdict,
)
from reporter.analysis.signature import make_signature
from reporter.analysis.stacks import StackInfo, StackTable
from reporter.analysis.timeline import build as build_timeline
from reporter.analysis.verdict import Finding, decide
from reporter.analysis.wedge import WedgeReport
from reporter.analysis.wedge import detect as detect_wedge
from reporter.gcpause import gc_paused
from reporter.model import Bundle

if TYPE_CHECKING:
    from reporter.analysis.excerpts import SourceReader


def _history(process: RankedProcess, table: StackTable) -> tuple[StackInfo, ...]:
    out = []
    for dump in process.snapshots:
        thread = main_thread(dump)
        out.append(table.intern(thread.frames if thread is not None else ()))
    return tuple(out)


def _identity(process: RankedProcess) -> RankIdentity:
    latest = process.snapshots[-1] if process.snapshots else None
    return RankIdentity(
        key=process.key,
        rank=process.rank,
        role=process.role,
        dims=process.dims,
        source=process.source,
        detail=process.detail,
        pid=latest.pid if latest is not None and latest.pid is not None else process.pid,
        title=process.title,
    )


def _chosen_classes(
    finding: Finding, classes: tuple[StackClass, ...]
) -> tuple[tuple[StackClass, ...], bool]:
    """Classes the branch point and signature rest on, and whether a branch point applies."""
    if finding.verdict is Verdict.COLLECTIVE_DESYNC:
        units = set(finding.desync_units)
        return tuple(c for c in classes if units.intersection(c.ranks)), True
    if finding.verdict is Verdict.PROGRESSING:
        # A moving job has no stable picture; only its laggards are worth a signature.
        lag = set(finding.laggards)
        return tuple(c for c in classes if lag.intersection(c.ranks)), False
    return classes, finding.verdict is Verdict.ALL_STUCK


def analyze(
    bundle: Bundle,
    *,
    similarity: Similarity = Similarity.LINES_IGNORED,
    sources: SourceReader | None = None,
    context: int = 6,
) -> Analysis:
    """Analyse every rank's stacks in `bundle` and return the verdict with its evidence.

    `sources` finds local source files (`--source-root`) for the code excerpts, which
    show `context` lines on each side of a frame's line.
    """
    with gc_paused():
        return _analyze(bundle, similarity, sources, context)


def _analyze(
    bundle: Bundle, similarity: Similarity, sources: SourceReader | None, context: int
) -> Analysis:
    classifier = default_classifier()
    table = StackTable(classifier)
    rank_map = identify(bundle)

    views: list[UnitView] = []
    processes: list[RankProcess] = []
    members: list[Member] = []
    samples: list[ThreadSample] = []
    for process in rank_map.ranks:
        history = _history(process, table)
        state = rank_state(history)
        identity = _identity(process)
        views.append(
            UnitView(
                unit=process.unit,
                group=process.group,
                pid=identity.pid,
                state=state,
                history=history,
            )
        )
        processes.append(RankProcess(identity=identity, snapshots=process.snapshots, state=state))
        members.append(Member(unit=process.unit, state=state, pid=identity.pid, info=history[-1]))
        latest = process.snapshots[-1]
        main = main_thread(latest)
        for thread in latest.threads:
            if thread is not main:
                samples.append(
                    ThreadSample(
                        unit=process.unit,
                        state=state,
                        pid=identity.pid,
                        thread=thread,
                        info=table.intern(thread.frames),
                    )
                )
    others = tuple(
        RankProcess(
            identity=_identity(p), snapshots=p.snapshots, state=rank_state(_history(p, table))
        )
        for p in rank_map.others
    )

    classes, pairs = stack_classes(members, similarity)
    tree = build_tree(pairs, similarity, table)
    thread_groups, idle_threads = split_threads(samples, similarity, table)
    snapshots = max((len(p.snapshots) for p in rank_map.ranks), default=0)
    finding = decide(views, snapshots)

    missing: tuple[int, ...] = ()
    if rank_map.unit == "rank" and rank_map.world_size is not None:
        present = {p.unit for p in rank_map.ranks}
        missing = tuple(r for r in range(rank_map.world_size) if r not in present)

    chosen, wants_branch = _chosen_classes(finding, classes)
    branch = branch_point(chosen, table) if wants_branch else None
    ctx = Context(
        unit=rank_map.unit,
        ranks=len(views),
        snapshots=snapshots,
        classes=classes,
        branch_point=branch,
        missing=missing,
        world_size=rank_map.world_size,
        world_detail=rank_map.world_detail,
        failed=rank_map.failed,
        unidentified=rank_map.unidentified,
    )
    level, notes = confidence(finding, ctx)
    wedge = detect_wedge(bundle.series, bundle.manifest.wedge)
    clients = surroundings.go_clients(bundle, similarity)
    warnings = tuple(str(w) for w in bundle.warnings) + rank_map.warnings
    if rank_map.world_size is not None and views and rank_map.unit == "rank":
        beyond = [v.unit for v in views if v.unit >= rank_map.world_size]
        if beyond:
            warnings += (
                f"ranks {beyond} lie beyond the world size {rank_map.world_size} "
                f"({rank_map.world_detail})",
            )
    analysis = Analysis(
        verdict=finding.verdict,
        confidence=level,
        confidence_notes=notes,
        summary=summary(finding, ctx, chosen, classifier)
        + _wedge_sentence(wedge, bundle)
        + surroundings.clients_sentence(clients, wedge),
        snapshots=snapshots,
        rank_unit=rank_map.unit,
        processes=tuple(processes),
        others=others,
        classes=classes,
        tree=tree,
        thread_groups=thread_groups,
        idle_threads=idle_threads,
        branch_point=branch,
        missing_ranks=missing,
        failed=rank_map.failed,
        laggards=finding.laggards,
        signature=make_signature(finding.verdict, chosen, classifier),
        warnings=warnings,
        wedge=wedge,
        timeline=build_timeline(bundle, wedge, surroundings.clients_events(clients)),
        goroutines=clients,
    )
    return surroundings.complete(analysis, bundle, sources=sources, context=context)


def _wedge_sentence(wedge: WedgeReport | None, bundle: Bundle) -> str:
    """What the metrics add to the stack verdict's summary ("" when they add nothing)."""
    if wedge is None or wedge.episode is None:
        return ""
    from reporter.times import iso

    episode = wedge.episode
    state = (
        "and was still wedged at the last sample"
        if episode.end is None
        else f"until {iso(episode.end)} ({episode.end_reason})"
    )
    text = f" Metrics: generation output stopped with requests waiting from {iso(episode.onset)} {state}."
    dated = [d.captured_at for d in bundle.dumps if d.captured_at is not None]
    if dated:
        lead = (min(dated) - episode.onset).total_seconds()
        if lead >= 0:
            text += f" The first stack dump was taken {lead:.0f} s after the onset."
    elif not bundle.dumps:
        text += " Capture py-spy dumps of every rank while it lasts to see where it is stuck."
    return text
