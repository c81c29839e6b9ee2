"""Stable hang signature: the same hang on another run gives the same text and hash.

Input: the verdict and the stack classes it rests on. Output: `Signature`
with a readable `text` and `hash` = first 12 hex digits of sha256(text).
Per class one line: what it is doing (collective, wait, or running) and up to
six informative frames, innermost six, written outermost first as short
function name and file basename. PIDs, thread ids, line numbers, ranks,
install prefixes (only file basenames are kept) and generic frames stay out; lines are
sorted and de-duplicated::

    collective-desync
    all_reduce: event_loop (scheduler.py) > check_hicache_events (scheduler.py) > all_reduce (distributed_c10d.py)
    wait zmq-poll: event_loop (scheduler.py) > on_idle (scheduler.py) > poll (poll.py)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from reporter.analysis.classify import Classifier
from reporter.analysis.result import Signature, StackClass, Verdict
from reporter.model import Frame

MAX_FRAMES = 6


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def signature_frames(frames: Sequence[Frame], classifier: Classifier) -> tuple[Frame, ...]:
    """The frames a class contributes (innermost first): informative Python frames, or the
    informative native ones when the stack has no Python frame, at most `MAX_FRAMES`."""
    informative = [f for f in frames if classifier.classify(f).informative]
    python = [f for f in informative if not classifier.classify(f).native]
    return tuple((python or informative)[:MAX_FRAMES])


def class_line(stack: StackClass, classifier: Classifier) -> str:
    """One class's part of the signature text."""
    if stack.collective:
        what = stack.collective
    elif stack.wait:
        what = f"wait {stack.wait}"
    else:
        what = "running"
    chosen = signature_frames(stack.frames, classifier)
    path = " > ".join(f"{f.short_function} ({_basename(f.file)})" for f in reversed(chosen))
    return f"{what}: {path}" if path else what


def make_signature(
    verdict: Verdict,
    classes: Sequence[StackClass],
    classifier: Classifier,
    evidence: Sequence[str] = (),
) -> Signature:
    """Signature of the verdict over `classes`; without classes, over `evidence` lines
    (see `evidence_lines`), so that bundles without stacks do not all share one."""
    lines = sorted({class_line(c, classifier) for c in classes})
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
