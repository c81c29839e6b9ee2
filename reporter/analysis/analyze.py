"""The analysis pipeline: `Bundle` in, `Analysis` out.

Steps: identify instances, ranks and their snapshots (ranks.py); then, per
instance (one server or job; the top-level verdict is the most severe one), intern every main
stack and the latest snapshot's other threads (stacks.py), per-rank states
(progress.py: stuck, moving, idle), classes and trees (merge.py), the verdict and
who waits for whom (verdict.py),
branch point (branch.py), confidence and summary (explain.py) and the
signature (signature.py); then the metric history's wedge (wedge.py), the Go
clients (goroutines.py), the timeline of everything dated (timeline.py), and the
environment, baseline diff and code excerpts (surroundings.py). Pure: no I/O,
deterministic output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

from reporter.analysis import (
    flight_recorder,
    moments,
    outcomes,
    procgraph,
    procstate,
    surroundings,
    waits_verdict,
)
from reporter.analysis.branch import branch_point
from reporter.analysis.classify import Classifier, default_classifier
from reporter.analysis.clues import has_locals, main_thread
from reporter.analysis.decide import Facts, decide
from reporter.analysis.explain import Context, confidence, summary
from reporter.analysis.gosignature import go_wait_lines
from reporter.analysis.groups import (
    FrGroup,
    FrP2p,
    flight_recorder_groups,
    flight_recorder_p2p,
    local_peer,
    process_group,
)
from reporter.analysis.hosts import host_rows, missing_text
from reporter.analysis.merge import (
    Member,
    ThreadSample,
    build_tree,
    split_threads,
    stack_classes,
)
from reporter.analysis.progress import (
    UnitView,
    completed_by_peer,
    raw_state,
    snapshot_idle,
)
from reporter.analysis.ranks import Instance, RankedProcess, RankMap, identify
from reporter.analysis.result import (
    Analysis,
    BranchPoint,
    Condition,
    Confidence,
    FailedRank,
    InstanceVerdict,
    RankProcess,
    RankState,
    Signature,
    Similarity,
    StackClass,
    TreeNode,
    Verdict,
    WaitsFor,
)
from reporter.analysis.signature import evidence_lines, make_signature
from reporter.analysis.stacks import StackInfo, StackTable
from reporter.analysis.timeline import build as build_timeline
from reporter.analysis.verdict import Finding, with_unavailable
from reporter.analysis.verdict import decide as read_stacks
from reporter.analysis.waitgraph import GraphContext, build_graph
from reporter.analysis.wedge import WedgeReport
from reporter.analysis.wedge import detect as detect_wedge
from reporter.core.gcpause import gc_paused
from reporter.core.times import iso
from reporter.model import Bundle, Frame, ProcState, ThreadStack, ThreadStatus

if TYPE_CHECKING:
    from reporter.analysis.excerpts import SourceReader


def _history(process: RankedProcess, table: StackTable) -> tuple[StackInfo, ...]:
    out = []
    for dump in process.snapshots:
        thread = main_thread(dump)
        out.append(table.intern(thread.frames if thread is not None else ()))
    return tuple(out)


_HEADLINE = attrgetter("headline")
_CAPTURED_AT = attrgetter("captured_at")
_SNAPSHOTS = attrgetter("snapshots")


def _interned(
    threads: Sequence[ThreadStack | None], intern: Callable[[tuple[Frame, ...]], StackInfo]
) -> tuple[StackInfo, ...]:
    """The interned stacks of `threads` (() for a missing thread); a stuck rank's snapshots
    share one frames tuple, interned once."""
    out: list[StackInfo] = []
    last: tuple[Frame, ...] | None = None
    info: StackInfo | None = None
    for thread in threads:
        frames = thread.frames if thread is not None else ()
        if frames is not last or info is None:
            info = intern(frames)
            last = frames
        out.append(info)
    return tuple(out)


def _shows_locals(threads: Sequence[ThreadStack | None]) -> bool:
    """Whether a main thread shows `--locals`; a stuck rank's shared frames looked at once."""
    last: tuple[Frame, ...] | None = None
    for thread in threads:
        if thread is not None and thread.frames is not last:
            last = thread.frames
            if has_locals(last):
                return True
    return False


def _states(
    threads: Sequence[ThreadStack | None], history: tuple[StackInfo, ...]
) -> tuple[RankState, RankState]:
    """(state shown, motion): idle when every snapshot idles, else stuck / moving / unknown.

    `threads` are the snapshots' main threads, `history` their interned stacks."""
    motion = raw_state(history)
    # `rank_state` with the motion computed once; the first busy snapshot settles it.
    idle = bool(history) and all(
        snapshot_idle(info, thread.status if thread else ThreadStatus.UNKNOWN)
        for thread, info in zip(threads, history, strict=True)
    )
    return RankState.IDLE if idle else motion, motion


def _chosen_classes(
    finding: Finding, classes: tuple[StackClass, ...]
) -> tuple[tuple[StackClass, ...], bool]:
    """Classes the branch point and signature rest on, and whether a branch point applies."""
    if finding.verdict in (Verdict.COLLECTIVE_DESYNC, Verdict.P2P_DEADLOCK):
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


@dataclass(slots=True, kw_only=True)
class _Part:
    """One instance analysed on its own."""

    instance: Instance
    finding: Finding
    level: Confidence
    notes: tuple[str, ...]
    summary: str
    classes: tuple[StackClass, ...]
    chosen: tuple[StackClass, ...]
    tree: TreeNode
    branch: BranchPoint | None
    missing: tuple[int, ...]
    processes: list[RankProcess]
    samples: list[ThreadSample]
    edges: tuple[WaitsFor, ...]
    snapshots: int


def _absent(
    missing: tuple[int, ...],
    failed: tuple[FailedRank, ...],
    groups: dict[int, str],
    states: tuple[ProcState, ...] = (),
) -> list[tuple[int, str, str]]:
    """Ranks without stacks, with their group and state: `gone`, `missing`, or what the
    process state evidence of their failed dumps says (`stopped`, ...)."""
    gone = {f.rank for f in failed if f.rank is not None and f.state == "gone"}
    only_group = next(iter(set(groups.values()))) if len(set(groups.values())) == 1 else None
    out = []
    for rank in missing:
        group = only_group if only_group is not None else ""
        own = [f for f in failed if f.rank == rank]
        pids = {f.failure.pid for f in own if f.failure.pid is not None}
        cond = procstate.condition((), (), own, [s for s in states if s.pid in pids])
        state = cond.state.value if cond is not None else ("gone" if rank in gone else "missing")
        out.append((rank, group, state))
    return out


def _peers(
    process: RankedProcess,
    direction: str | None,
    classifier: Classifier,
    fr_p2p: dict[int, FrP2p],
    unit: str,
) -> tuple[tuple[int, ...], str]:
    """The global ranks a point-to-point wait waits for, and where that was read: `--locals`
    first, then the Flight Recorder's pending p2p entry of the same direction."""
    if direction is None or unit != "rank":
        return (), ""
    peer = local_peer(process.snapshots, classifier, direction)
    if peer is not None and peer.rank is not None:
        return (peer.rank,), peer.source
    pending = fr_p2p.get(process.unit)
    if (
        pending is not None
        and pending.peer.rank is not None
        and direction in (pending.direction, "either")
    ):
        return (pending.peer.rank,), pending.peer.source
    return (), ""


def _part(
    instance: Instance,
    rank_map: RankMap,
    table: StackTable,
    similarity: Similarity,
    classifier: Classifier,
    fr_p2p: dict[int, FrP2p],
    fr_groups: dict[int, FrGroup],
    states: tuple[ProcState, ...] = (),
) -> _Part:
    views: list[UnitView] = []
    processes: list[RankProcess] = []
    members: list[Member] = []
    samples: list[ThreadSample] = []
    frozen: list[tuple[UnitView, Condition]] = []
    built: list[tuple[RankedProcess, UnitView, Condition | None, ThreadStack | None]] = []
    intern = table.intern
    # Per collective name, asked of every rank.
    directions: dict[str | None, str | None] = {}
    # Process state evidence names a condition only with failures, status copies or a
    # faulthandler headline (a crash); most big jobs have none of them.
    conditions = bool(instance.failed or states) or any(
        map(_HEADLINE, chain.from_iterable(map(_SNAPSHOTS, instance.ranks)))
    )
    # Undated dumps are a moment each: a rank's moments are then its dumps with threads.
    dated = any(map(_CAPTURED_AT, chain.from_iterable(map(_SNAPSHOTS, instance.ranks))))
    snapshots = 0
    by_rank = rank_map.unit == "rank" and bool(fr_groups)
    for process in instance.ranks:
        threads = [main_thread(dump) for dump in process.snapshots]
        if not dated:
            # main_thread is None only for a dump without threads.
            moments_seen = len(threads) - sum(t is None for t in threads)
            snapshots = max(snapshots, moments_seen or len(threads))
        history = _interned(threads, intern)
        state, motion = _states(threads, history)
        identity = process.identity
        # Where it was last seen, as UnitView.latest: a dump that failed after its header
        # (no frames) says nothing of the call it waits in.
        seen = history[-1] if history[-1].frames else procstate.last_seen(history) or history[-1]
        collective = seen.facts.collective
        if collective in directions:
            direction = directions[collective]
        else:
            direction = directions[collective] = classifier.rules.p2p_direction(collective)
        peers, peer_source = (
            _peers(process, direction, classifier, fr_p2p, rank_map.unit)
            if direction is not None
            else ((), "")
        )
        # The group is read from `--locals`: most dumps have none.
        pg = process_group(process.snapshots, classifier) if _shows_locals(threads) else None
        fr_group = fr_groups.get(process.unit) if by_rank else None
        if fr_group is not None and pg is None:
            pg = fr_group.name or None
        cond = (
            outcomes.condition_of(process, history, instance.failed, states) if conditions else None
        )
        if cond is not None:
            state = motion = cond.state
        view = UnitView(
            unit=process.unit,
            group=process.group,
            pid=identity.pid,
            state=state,
            history=history,
            raw=motion,
            pg=pg,
            p2p=direction,
            peers=peers,
            peer_source=peer_source,
            pg_ranks=fr_group.ranks if fr_group is not None and pg != "default" else (),
        )
        built.append((process, view, cond, threads[-1]))
    # A stopped or crashed rank takes no part (the others wait for it); of the others, one
    # whose group peer returned from its collective took part: moving (see the function).
    passed = completed_by_peer([view for _, view, cond, _ in built if cond is None])
    for process, view, cond, main in built:
        if view.unit in passed:
            view = replace(view, state=RankState.MOVING, raw=RankState.MOVING)
        if cond is None:
            views.append(view)
        else:
            frozen.append((view, cond))
        identity = process.identity
        processes.append(
            RankProcess(
                identity=identity,
                snapshots=process.snapshots,
                state=view.state,
                condition=cond,
                unit=process.unit,
            )
        )
        history = view.history
        shown = (procstate.last_seen(history) or history[-1]) if cond is not None else history[-1]
        unit, state, pid = process.unit, view.state, identity.pid
        members.append(Member(unit, state, pid, shown))
        latest = process.snapshots[-1]  # `main` is its main thread
        # Positional: thousands of ranks, a few threads each (fields: unit, state, pid,
        # thread, info).
        samples.extend(
            [
                ThreadSample(unit, state, pid, t, intern(t.frames))
                for t in latest.threads
                if t is not main
            ]
        )
    classes, pairs = stack_classes(members, similarity)
    classes = tuple(replace(c, instance=instance.id) for c in classes)
    tree = build_tree(pairs, similarity, table)
    # A dump with no thread (py-spy printed the header, then failed) shows no stack.
    # A snapshot is a moment: text, --json, --locals and --native dumps of one moment count once.
    if dated:
        snapshots = max(
            (moments.count(p.snapshots) or len(p.snapshots) for p in instance.ranks),
            default=0,
        )

    missing: tuple[int, ...] = ()
    if rank_map.unit == "rank" and instance.world_size is not None:
        present = {p.unit for p in instance.ranks}
        missing = tuple(r for r in range(instance.world_size) if r not in present)
    absent = _absent(
        missing, instance.failed, {v.unit: v.group for v in views + [f[0] for f in frozen]}, states
    )
    absent += [(view.unit, view.group, cond.state.value) for view, cond in frozen]
    finding = with_unavailable(
        read_stacks(views, snapshots, absent, instance=instance.id), views, absent, frozen
    )
    if passed:
        finding = replace(finding, notes=(*finding.notes, *passed.values()))
    edges: tuple[WaitsFor, ...] = ()
    if finding.verdict is not Verdict.PROGRESSING:
        edges = outcomes.name_frozen(finding.edges, frozen)
    chosen, wants_branch = _chosen_classes(finding, classes)
    branch = branch_point(chosen, table) if wants_branch else None
    ctx = Context(
        unit=rank_map.unit,
        ranks=len(views),
        snapshots=snapshots,
        classes=classes,
        branch_point=branch,
        missing=missing,
        world_size=instance.world_size,
        world_detail=instance.world_detail,
        failed=instance.failed if len(rank_map.instances) > 1 else rank_map.failed,
        unidentified=rank_map.unidentified,
        waits_for=edges,
        ambiguous=instance.ambiguous,
    )
    level, notes = confidence(finding, ctx)
    return _Part(
        instance=instance,
        finding=finding,
        level=level,
        notes=notes,
        summary=summary(finding, ctx, chosen, classifier),
        classes=classes,
        chosen=chosen,
        tree=tree,
        branch=branch,
        missing=missing,
        processes=processes,
        samples=samples,
        edges=edges,
        snapshots=snapshots,
    )


# Most severe first: the top-level verdict of several instances is the most severe one.
_SEVERITY = {
    Verdict.P2P_DEADLOCK: 0,
    Verdict.COLLECTIVE_DESYNC: 0,
    Verdict.ALL_STUCK: 1,
    Verdict.PROGRESSING: 2,
    Verdict.INCONCLUSIVE: 3,
    # Decided over the whole bundle (outcomes.py), never per instance; listed for completeness.
    Verdict.CRASHED: -2,
    Verdict.THREAD_DEADLOCK: -1,
}
_LEVELS = (Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW)


def _analyze(
    bundle: Bundle, similarity: Similarity, sources: SourceReader | None, context: int
) -> Analysis:
    classifier = default_classifier()
    table = StackTable(classifier)
    rank_map = identify(bundle)
    instances = rank_map.instances or (
        Instance(
            id="1",
            label="",
            how="",
            ranks=(),
            world_size=None,
            world_detail="",
            failed=rank_map.failed,
        ),
    )
    # One instance's ranks only: Flight Recorder traces name ranks without an instance.
    single = len(instances) == 1
    fr_p2p = flight_recorder_p2p(bundle.flight_recorder) if single else {}
    fr_groups = flight_recorder_groups(bundle.flight_recorder) if single else {}
    parts = [
        _part(i, rank_map, table, similarity, classifier, fr_p2p, fr_groups, bundle.proc_states)
        for i in instances
    ]
    main = min(parts, key=lambda p: (_SEVERITY[p.finding.verdict], int(p.instance.id)))
    multi = len(parts) > 1

    others = tuple(
        outcomes.other_process(p, _history(p, table), rank_map.failed, bundle.proc_states)
        for p in rank_map.others
    )
    thread_groups, idle_threads = split_threads(main.samples, similarity, table)
    wedge = detect_wedge(bundle.series, bundle.manifest.wedge)
    clients = surroundings.go_clients(bundle, similarity)
    warnings = tuple(str(w) for w in bundle.warnings) + rank_map.warnings
    for part in parts:
        inst = part.instance
        if inst.world_size is not None and rank_map.unit == "rank":
            beyond = [p.unit for p in inst.ranks if p.unit >= inst.world_size]
            if beyond:
                where = f" in instance {inst.id}" if multi else ""
                warnings += (
                    f"ranks {beyond}{where} lie beyond the world size {inst.world_size} "
                    f"({inst.world_detail})",
                )

    level, notes, text = main.level, main.notes, main.summary
    verdicts: tuple[InstanceVerdict, ...] = ()
    if multi:
        verdicts = tuple(
            InstanceVerdict(
                id=p.instance.id,
                label=p.instance.label,
                how=p.instance.how,
                pids=tuple(sorted(r.pid for r in p.instance.ranks if r.pid is not None)),
                ranks=tuple(sorted({r.unit for r in p.instance.ranks})),
                verdict=p.finding.verdict,
                confidence=p.level,
                summary=p.summary,
            )
            for p in parts
        )
        rest = [p for p in parts if p is not main]
        text = (
            f"{len(parts)} instances (servers or jobs) in the evidence, each with its own ranks. "
            f"Instance {main.instance.id} ({main.instance.label}): {main.summary} "
            + " ".join(
                f"Instance {p.instance.id} ({p.instance.label}): {p.finding.verdict.value}."
                for p in rest
            )
        )
        if not main.instance.ambiguous and any(p.instance.ambiguous for p in parts):
            notes = (
                *notes,
                "processes claiming the same rank were told apart only by PID order",
            )
            level = _LEVELS[min(len(notes), len(_LEVELS) - 1)]

    processes = tuple(p for part in parts for p in part.processes)
    clients_text = surroundings.clients_sentence(clients, wedge)
    stack_text = (
        text + _wedge_sentence(wedge, bundle) + (f" {clients_text}" if clients_text else "")
    )
    stack_signature = make_signature(main.finding.verdict, main.chosen or main.classes, classifier)
    # The analysis before its verdict: the stack reading stands in until the table decides.
    analysis = Analysis(
        verdict=main.finding.verdict,
        confidence=level,
        confidence_notes=notes,
        summary=stack_text,
        snapshots=max((p.snapshots for p in parts), default=0),
        rank_unit=rank_map.unit,
        processes=processes,
        others=others,
        classes=tuple(c for part in parts for c in part.classes),
        tree=main.tree,
        thread_groups=thread_groups,
        idle_threads=idle_threads,
        branch_point=main.branch,
        missing_ranks=main.missing,
        failed=rank_map.failed,
        laggards=main.finding.laggards,
        signature=stack_signature,
        warnings=warnings,
        wedge=wedge,
        timeline=build_timeline(bundle, wedge, surroundings.clients_events(clients)),
        goroutines=clients,
        clients_sentence=clients_text,
        waits_for=tuple(e for part in parts for e in part.edges),
        instances=verdicts,
        p2p_cycles=tuple(c for part in parts for c in part.finding.cycles),
        p2p_deadlock=main.finding.deadlock,
    )
    # Every fact first: process state outcomes, hosts, the Flight Recorder, the wait graph.
    outcome = outcomes.read(analysis, table, classifier, sources)
    analysis = replace(
        analysis, thread_deadlocks=outcome.deadlocks, blocked_threads=outcome.blocked
    )
    rows = host_rows(bundle, analysis.processes, analysis.others, rank_map.failed)
    hosts_sentence, hosts_note = missing_text(rows) if rows else ("", "")
    if rows:
        analysis = replace(analysis, hosts=rows)
    fr = flight_recorder.read(analysis, bundle, classifier)
    analysis = replace(analysis, flight_recorder=fr.fr)
    graph_context = GraphContext(
        analysis=analysis, classifier=classifier, table=table, sources=sources
    )
    graph = build_graph(bundle, graph_context)
    facts = Facts(
        stacks=main.finding.verdict,
        stack_text=stack_text,
        stack_level=level,
        stack_notes=notes,
        stack_signature=stack_signature,
        outcome=outcome,
        hosts_sentence=hosts_sentence,
        hosts_note=hosts_note,
        fr=fr,
        process=procgraph.reading(graph_context),
        graph=graph,
        waits=waits_verdict.read(graph),
    )
    # Then the verdict, once, by the table of reporter/data/verdicts.toml.
    analysis = decide(analysis, facts, classifier)
    done = surroundings.complete(analysis, bundle, sources=sources, context=context)
    if done.signature.text.count("\n") == 0:
        # Nothing from stacks: the signature rests on what the verdict rests on instead.
        done = replace(done, signature=_evidence_signature(done, bundle, classifier))
    return done


def _evidence_signature(analysis: Analysis, bundle: Bundle, classifier: Classifier) -> Signature:
    roles = {p.identity.pid: p.identity.role or "" for p in (*analysis.processes, *analysis.others)}
    failures = sorted(
        {
            (
                f.state,
                roles.get(f.failure.pid, "") if f.failure.pid is not None else "",
                f.failure.reason,
            )
            for f in analysis.failed
        }
    )
    signals = (
        [s.name for s in analysis.wedge.signals if s.shows_wedge]
        if analysis.wedge is not None and analysis.wedge.episode is not None
        else []
    )
    change = (
        analysis.diff.changes[0] if analysis.diff is not None and analysis.diff.changes else None
    )
    top = f"{change.kind.value} {change.key}: {change.before} -> {change.after}" if change else None
    lines = evidence_lines(
        wedge_signals=signals,
        failures=failures,
        top_change=top,
        kinds=sorted({f.kind.value for f in bundle.files}),
    )
    go = go_wait_lines(analysis.goroutines)
    if go and all(line.startswith("evidence: ") for line in lines):
        # Go dumps: where their goroutines wait, not which format they came in.
        lines = go
    return make_signature(analysis.verdict, (), classifier, lines)


def _wedge_sentence(wedge: WedgeReport | None, bundle: Bundle) -> str:
    """What the metrics add to the stack verdict's summary ("" when they add nothing)."""
    if wedge is None or wedge.episode is None:
        return ""

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
