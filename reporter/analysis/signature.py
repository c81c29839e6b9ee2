"""Stable hang signature: the same hang on another run gives the same text and hash.

Input: the verdict and the stack classes it rests on. Output: `Signature`
with a readable `text` and `hash` = first 12 hex digits of sha256(text).
Per class one line: what it is doing (collective, wait, or running) and up to
six informative frames, innermost six, written outermost first as short
function name and file basename. PIDs, thread ids, line numbers, ranks,
install prefixes (only file basenames are kept) and generic frames stay out; lines are
sorted and de-duplicated.

Only the hang's own frames enter, never how the process was started: bootstrap frames
(`[[bootstrap]]` in frames.toml: `<module>`, runpy, multiprocessing's spawn, mp.spawn's
`_wrap`, torchrun's agent) are left out, and so is the process entry function right under
them (`main` in a plain script, the `mp.spawn` target), so the same hang started by another
launcher keeps its signature. Where the classes part (their branch point), each line starts
at the shared frame: the frames above it are common to every class and say nothing of the
split::

    collective-desync
    all_reduce: event_loop (scheduler.py) > check_hicache_events (scheduler.py) > all_reduce (distributed_c10d.py)
    not stuck: event_loop (scheduler.py)

Idle ranks that the ranks of a collective wait for (polling or sleeping in their loop in
every snapshot) contribute the loop they idle in (their outermost frame below the entry),
never the frame a snapshot happened to catch them in, so two captures of the same hang give
the same signature; they do not move the branch point either. Moving ranks are written
from their call site outward.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from reporter.analysis.classify import Classifier, FrameKind
from reporter.analysis.result import RankState, Signature, StackClass, Verdict
from reporter.model import Frame

MAX_FRAMES = 6


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _key(frame: Frame) -> tuple[str, str]:
    return (frame.short_function, _basename(frame.file))


def _entry(frames: Sequence[Frame], classifier: Classifier) -> Frame | None:
    """The process entry: the outermost Python frame that is no bootstrap frame, when a
    bootstrap frame (`<module>`, spawn, torchrun's agent) sits above it; else None."""
    started = False
    for frame in reversed(frames):
        if classifier.classify(frame).native:
            continue
        if classifier.bootstrap_rule(frame) is not None:
            started = True
            continue
        return frame if started else None
    return None


def signature_frames(
    frames: Sequence[Frame], classifier: Classifier, anchor: Frame | None = None
) -> tuple[Frame, ...]:
    """The frames a class contributes (innermost first): informative Python frames, or the
    informative native ones when the stack has no Python frame, without bootstrap frames,
    at most `MAX_FRAMES`. With an `anchor` (the branch point's shared frame) the frames stop
    there; the process entry function is left out when others remain."""
    informative = [f for f in frames if classifier.classify(f).informative]
    python = [f for f in informative if not classifier.classify(f).native]
    chosen = [f for f in (python or informative) if classifier.bootstrap_rule(f) is None]
    if anchor is not None:
        wanted = _key(anchor)
        cut = next((i for i, f in enumerate(chosen) if _key(f) == wanted), None)
        if cut is not None:
            chosen = chosen[: cut + 1]
    entry = _entry(frames, classifier)
    if entry is not None and len(chosen) > 1 and chosen[-1] is entry:
        chosen = chosen[:-1]
    return tuple(chosen[:MAX_FRAMES])


def _path(frames: Sequence[Frame]) -> str:
    return " > ".join(f"{f.short_function} ({_basename(f.file)})" for f in reversed(frames))


def class_line(
    stack: StackClass,
    classifier: Classifier,
    anchor: Frame | None = None,
    *,
    other_side: bool = False,
) -> str:
    """One class's part of the signature text.

    An idle class on the `other_side` of a collective (the ranks the collective's ranks
    wait for, polling or sleeping in their loop) is written as the loop it idles in, its
    outermost frame below the entry (`not stuck: event_loop (scheduler.py)`): which frame
    inside that loop a snapshot caught is chance (`recv_requests` on one capture,
    `self_check_during_idle` on the next). An idle class that is itself the wait (a
    consumer on a queue, a child on a socket) keeps its frames. A moving class is written from its
    call site outward (`moving: loop > forward`): where a snapshot caught it above that is
    chance too. Every other class (stuck, stopped, in the kernel, one snapshot) keeps its
    exact frames."""
    if other_side and stack.state is RankState.IDLE:
        chosen = signature_frames(stack.frames, classifier)
        return f"not stuck: {_path(chosen[-1:])}" if chosen else "not stuck"
    frames: Sequence[Frame] = stack.frames
    if stack.state is RankState.MOVING:
        site = next(
            (
                i
                for i, f in enumerate(frames)
                if classifier.classify(f).kind is FrameKind.APPLICATION
            ),
            None,
        )
        if site is not None:
            path = _path(signature_frames(frames[site:], classifier, anchor))
            return f"moving: {path}" if path else "moving"
    if stack.collective:
        what = stack.collective
    elif stack.wait:
        what = f"wait {stack.wait}"
    else:
        what = "running"
    path = _path(signature_frames(frames, classifier, anchor))
    return f"{what}: {path}" if path else what


def _shared_frame(classes: Sequence[StackClass]) -> Frame | None:
    """The deepest frame every one of `classes` runs under (their branch point), or None
    for fewer than two classes."""
    if len(classes) < 2:
        return None
    shared: Frame | None = None
    for level in zip(*(reversed(c.frames) for c in classes), strict=False):
        if len({_key(f) for f in level}) != 1:
            break
        shared = level[0]
    return shared


def make_signature(
    verdict: Verdict,
    classes: Sequence[StackClass],
    classifier: Classifier,
    evidence: Sequence[str] = (),
) -> Signature:
    """Signature of the verdict over `classes`; without classes, over `evidence` lines
    (see `evidence_lines`), so that bundles without stacks do not all share one.

    The lines start where the classes part from each other (the frames above are common
    to them and say nothing of the split); idle ranks beside a collective do not move that
    point, since where a snapshot caught them is chance."""
    # Idle ranks beside ranks in a collective are the side that never joined it.
    split = any(c.collective and c.state is not RankState.IDLE for c in classes)
    anchor = _shared_frame([c for c in classes if not split or c.state is not RankState.IDLE])
    lines = sorted({class_line(c, classifier, anchor, other_side=split) for c in classes})
    if not lines:
        lines = sorted(set(evidence))
    text = "\n".join([verdict.value, *lines])
    return Signature(hash=hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], text=text)


_DIGITS = re.compile(r"\d+")


def evidence_lines(
    *,
    wedge_signals: Sequence[str] = (),
    failures: Sequence[tuple[str, str, str]] = (),
    top_change: str | None = None,
    kinds: Sequence[str] = (),
) -> tuple[str, ...]:
    """What a verdict without stacks rests on, one line each: the metric signals that show
    the wedge, each failed dump's state, role and reason (numbers stripped: PIDs and
    addresses differ between captures) and the top change since the last good run. With
    none of these, the evidence kinds present."""
    out = [f"wedge: {name}" for name in wedge_signals]
    for state, role, reason in failures:
        out.append(f"failed {state}: {role or 'process'}: {_DIGITS.sub('N', reason).strip()}")
    if top_change:
        out.append(f"changed: {top_change}")
    if not out:
        out = [f"evidence: {kind}" for kind in kinds]
    return tuple(out)
