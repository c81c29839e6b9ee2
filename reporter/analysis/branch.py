"""Branch point: where the stacks of diverging classes part.

Input: stack classes (representative frames innermost first). Output: a
`BranchPoint` with the common prefix (outermost first, compared with line
numbers ignored), its deepest informative frame, and per class the frames
from the first difference down to its collective or wait::

    shared: event_loop_overlap_disagg_decode
    [0-3]  recv_requests -> broadcast_pyobj -> broadcast      (broadcast)
    [4-7]  forward_batch -> all_reduce                         (all_reduce)
"""

from __future__ import annotations

from collections.abc import Sequence

from reporter.analysis.classify import Classifier, FrameKind
from reporter.analysis.result import Branch, BranchPoint, StackClass
from reporter.analysis.stacks import StackTable
from reporter.model import Frame

_HANG_KINDS = (FrameKind.COLLECTIVE, FrameKind.WAIT)


def branch_frames(frames: Sequence[Frame], classifier: Classifier) -> tuple[Frame, ...]:
    """Informative frames of `frames` (outermost first) down to the innermost Python
    collective / wait frame, or to the end when there is none."""
    kept: list[Frame] = []
    cut: int | None = None
    for frame in frames:
        kind = classifier.classify(frame)
        if kind.kind is FrameKind.GENERIC:
            continue
        if kind.native and kind.kind not in _HANG_KINDS:
            continue
        kept.append(frame)
        if not kind.native and kind.kind in _HANG_KINDS:
            cut = len(kept)
    return tuple(kept[:cut] if cut is not None else kept)


def branch_point(classes: Sequence[StackClass], table: StackTable) -> BranchPoint | None:
    """The branch point of two or more classes; None for fewer."""
    if len(classes) < 2:
        return None
    paths = [tuple(reversed(c.frames)) for c in classes]
    keys = [[table.name_key(f) for f in path] for path in paths]
    depth = 0
    shortest = min(len(k) for k in keys)
    while depth < shortest and all(k[depth] == keys[0][depth] for k in keys[1:]):
        depth += 1
    common = paths[0][:depth]
    classifier = table.classifier
    informative = [f for f in common if classifier.classify(f).informative]
    shared = informative[-1] if informative else (common[-1] if common else None)
    branches = tuple(
        Branch(
            ranks=c.ranks,
            frames=branch_frames(path[depth:], classifier),
            collective=c.collective,
        )
        for c, path in zip(classes, paths, strict=True)
    )
    return BranchPoint(shared=shared, common=common, branches=branches)
