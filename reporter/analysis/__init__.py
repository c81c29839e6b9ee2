"""Analysis layer: from a `Bundle` of stack dumps to a verdict with its evidence.

    analysis = analyze(bundle)                 # Analysis (reporter.analysis.result)
    data = to_json(analysis)                   # dict for `report analyze --json`

Modules: classify (frame rules from reporter/data/frames.toml), stacks
(interning), ranks (identity, snapshots, rank sets), progress (stuck /
moving), merge (classes, trees, thread groups), verdict, branch, explain
(confidence, summary), signature, export (JSON).
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
