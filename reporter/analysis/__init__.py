"""Analysis layer: from a `Bundle` of stack dumps to a verdict with its evidence.

    analysis = analyze(bundle)                 # Analysis (reporter.analysis.result)
    data = to_json(analysis)                   # dict for `report analyze --json`

Modules, in the order `analyze` uses them (`docs/architecture.md` tells how a verdict is
decided):

    analyze         the pipeline: `Bundle` in, `Analysis` out
    result, fr_result    the frozen result types (`fr_result`: the Flight Recorder's)
    stacks, classify, merge    interned stacks, frame rules, classes and trees
    ranks, rankfailed, ranksets, clues, moments, instances, hosts, groups
                    which process is which rank, snapshot, instance, host and group
    progress, branch, verdict    stuck or moving, where classes part, the stack reading
    p2p, threads, procstate, outcomes    p2p waits, lock cycles, process states, crashes
    fr_align, flight_recorder    the Flight Recorder: aligned traces, first mismatch
    waitgraph, graphproducers, procgraph    the wait-for graph and its built-in producers
    waits_proc, waits_children, waits_io, waits_fork, procfacts, waits_dist
                    the waits beyond collectives (processes on one host; distributed)
    waits_verdict, decide    the wait rules, then the one verdict table
    explain, signature, timeline    confidence and summary, the hang signature, the timeline
    goroutines, gosignature    Go client dumps: buckets, what they wait for
    wedge, online   metric history: wedge detection, and the same run online (`report watch`)
    surroundings, environment, env_rules, diff, excerpts, setupcalls
                    what is around the stacks: environment, changes, code, `timeout=` calls
    export, export_context    `analyze --json` as typed documents
"""

from reporter.analysis.analyze import analyze
from reporter.analysis.export import to_json
from reporter.analysis.ranksets import format_pids, format_ranks, parse_ranks
from reporter.analysis.result import (
    Analysis,
    Branch,
    BranchPoint,
    Confidence,
    IdleThread,
    RankIdentity,
    RankProcess,
    RankState,
    Signature,
    Similarity,
    StackClass,
    ThreadGroup,
    TreeNode,
    Verdict,
)

__all__ = [
    "Analysis",
    "Branch",
    "BranchPoint",
    "Confidence",
    "IdleThread",
    "RankIdentity",
    "RankProcess",
    "RankState",
    "Signature",
    "Similarity",
    "StackClass",
    "ThreadGroup",
    "TreeNode",
    "Verdict",
    "analyze",
    "format_pids",
    "format_ranks",
    "parse_ranks",
    "to_json",
]
