"""Signals of an issue text that carry over between trackers: exception types, product
versions and the class of failure, found once at index time and compared at search time.

Inputs: an issue's title and body (Markdown), or a bundle's analysis verdict. Output:
`Signals` (frozen), stored in the index as JSON (`to_json`, `from_json`). By example,
a body holding ``torch.OutOfMemoryError: CUDA out of memory`` and ``vLLM Version:
0.8.5.post1`` gives::

    Signals(exceptions=("outofmemoryerror",), versions=(("vllm", "0.8.5"),),
            classes=("oom",))

* **exception types**: the class names of the exceptions quoted (`RuntimeError`,
  `EngineDeadError`), lowercased and without their module; the ranker weighs a shared
  one by its rarity, so `RuntimeError` says little and `EngineDeadError` much.
* **versions**: `product -> version` for the software these reports are about (vLLM,
  SGLang, torch, NCCL, CUDA, transformers, flashinfer), as `collect_env` / `check_env`
  print them or as people write them (`vllm==0.6.3`, `sglang 0.4.6.post4`); the
  release, without local tags and build suffixes.
* **classes**: what kind of failure the text describes: `desync` (a collective that
  timed out or ranks in different collectives), `p2p` (send/recv), `crash` (a process
  died: illegal memory access, segfault, engine dead), `oom`, `deadlock` (threads or a
  lock), `hang` (stuck; implied by desync, p2p and deadlock). For a bundle the analysis'
  verdict says it (`classes_of_verdict`), never re-derived from text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# Each pattern is searched in the folded (lowercased) text; its class is set when found.
_CLASS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "oom",
        re.compile(r"out of memory|outofmemoryerror|\boom\b|cuda oom|memory exhausted"),
    ),
    (
        "crash",
        re.compile(
            r"illegal memory access|segmentation fault|sigsegv|core dumped|sigabrt"
            r"|enginedeaderror|engine ?core (?:encountered|died)|died unexpectedly"
            r"|exited unexpectedly|process .{0,40}(?:died|crashed|was killed)|\bcrash(?:ed|es)?\b"
            r"|fatal python error|device-side assert|unspecified launch failure"
        ),
    ),
    (
        "desync",
        re.compile(
            r"watchdog caught collective operation timeout|collective operation timeout"
            r"|desync|mismatched collective|collective mismatch|different collectives"
            r"|nccl (?:timeout|watchdog)|worknccl\(seqnum"
        ),
    ),
    (
        "p2p",
        re.compile(
            r"\b(?:isend|irecv|batch_isend_irecv|send_object_list|recv_object_list)\b"
            r"|p2p (?:deadlock|hang|send|recv)|point-to-point"
        ),
    ),
    ("deadlock", re.compile(r"deadlock|lock contention|gil (?:held|deadlock)|thread.{0,20}stuck")),
    (
        "hang",
        re.compile(r"\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|\bfreez(?:e|es|ing)\b|no progress"),
    ),
)
CLASSES = tuple(name for name, _ in _CLASS_PATTERNS)
# Words one of which each class's pattern needs: a substring test is far cheaper than a
# search, and most texts name two or three classes at most.
_CLASS_WORDS: Mapping[str, tuple[str, ...]] = {
    "oom": ("memory", "oom"),
    "crash": (
        "illegal",
        "segmentation",
        "sig",
        "core dumped",
        "engine",
        "died",
        "exited",
        "killed",
        "crash",
        "fatal",
        "assert",
        "launch failure",
    ),
    "desync": ("timeout", "desync", "mismatch", "different collectives", "nccl"),
    "p2p": ("send", "recv", "p2p", "point-to-point"),
    "deadlock": ("deadlock", "lock", "gil", "thread"),
    "hang": ("hang", "hung", "stuck", "freez", "no progress"),
}
_HANG_KINDS = frozenset({"desync", "p2p", "deadlock"})

# The analysis' verdict values (reporter.analysis.result.Verdict, by value so that a
# verdict added later maps by its name) and the classes they say.
_VERDICT_CLASSES: Mapping[str, tuple[str, ...]] = {
    "collective-desync": ("desync", "hang"),
    "all-stuck": ("hang",),
    "crashed": ("crash",),
    "thread-deadlock": ("deadlock", "hang"),
    "p2p-deadlock": ("p2p", "hang"),
    "p2p-desync": ("p2p", "hang"),
}
# Verdicts that say there is no incident to match: the ranks progress, or nothing could
# be told. A bundle with one of these gets related issues only for strong text matches.
NON_INCIDENT_VERDICTS = frozenset({"progressing", "inconclusive"})

_PRODUCTS: Mapping[str, str] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "torch": "torch",
    "pytorch": "torch",
    "nccl": "nccl",
    "cuda": "cuda",
    "transformers": "transformers",
    "flashinfer": "flashinfer",
    "flashinfer-python": "flashinfer",
}
_VERSION_RE = re.compile(
    r"(?<![\w-])(vllm|sglang|pytorch|torch|nccl|cuda|transformers|flashinfer(?:-python)?)"
    r"(?:\s+version)?\s*(?:==|=|:|\s|@|\bv)\s*v?(\d+\.\d+(?:\.\d+)?)(?:\.?post\d+)?"
)
# The class name only (a module path before it ends with a dot, which the look-behind
# allows): matching the dotted path too made the pattern retry at every word.
_EXCEPTION_RE = re.compile(r"(?<!\w)([A-Z]\w*?(?:Error|Exception))\b")
# Exception names every traceback holds in passing ("During handling of the above
# exception ...") or that name no failure.
_GENERIC_EXCEPTIONS = frozenset({"exception", "baseexception", "error"})
MAX_EXCEPTIONS = 8
MAX_TEXT_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class Signals:
    """What one text says beyond its words (see the module docstring)."""

    exceptions: tuple[str, ...] = ()
    versions: tuple[tuple[str, str], ...] = ()
    classes: tuple[str, ...] = ()

    def to_json(self) -> str:
        """The compact JSON stored in the index."""
        return json.dumps(
            {"e": list(self.exceptions), "v": dict(self.versions), "c": list(self.classes)},
            separators=(",", ":"),
        )


EMPTY = Signals()
_EMPTY_JSON = EMPTY.to_json()


def from_json(text: str | None) -> Signals:
    """`Signals` back from `to_json`'s form; empty for None or a damaged value."""
    if not text or text == _EMPTY_JSON:
        return EMPTY
    try:
        obj = json.loads(text)
        return Signals(
            exceptions=tuple(str(e) for e in obj.get("e", ())),
            versions=tuple((str(k), str(v)) for k, v in dict(obj.get("v", {})).items()),
            classes=tuple(str(c) for c in obj.get("c", ())),
        )
    except (ValueError, TypeError, AttributeError):
        return EMPTY


def extract_signals(title: str, body: str) -> Signals:
    """The signals of an issue's title and body."""
    text = f"{title}\n{body[:MAX_TEXT_CHARS]}"
    folded = text.lower()
    return Signals(
        exceptions=exception_types(text), versions=versions(folded), classes=classes(folded)
    )


def exception_types(text: str) -> tuple[str, ...]:
    """Exception class names quoted in `text`, lowercased without their module, in order."""
    found: dict[str, None] = {}
    for match in _EXCEPTION_RE.finditer(text):
        name = match.group(1).lower()
        if name not in _GENERIC_EXCEPTIONS:
            found.setdefault(name, None)
        if len(found) == MAX_EXCEPTIONS:
            break
    return tuple(found)


def versions(text: str) -> tuple[tuple[str, str], ...]:
    """(product, release) pairs named in `text`, the first mention of each product."""
    found: dict[str, str] = {}
    for match in _VERSION_RE.finditer(text.lower()):
        product = _PRODUCTS[match.group(1)]
        found.setdefault(product, match.group(2))
    return tuple(sorted(found.items()))


def classes(text: str) -> tuple[str, ...]:
    """The failure classes `text` describes (see the module docstring), in `CLASSES` order."""
    folded = text.lower()
    found = {
        name
        for name, pattern in _CLASS_PATTERNS
        if any(word in folded for word in _CLASS_WORDS[name]) and pattern.search(folded)
    }
    if found & _HANG_KINDS:
        # A desync, a p2p wait and a deadlock are hangs: they match a plain "stuck" too.
        found.add("hang")
    return tuple(c for c in CLASSES if c in found)


def classes_of_verdict(verdict: str, errors: Iterable[str] = ()) -> tuple[str, ...]:
    """The failure classes an analysis verdict says (by its value), plus `oom` when one of
    the bundle's error lines says it ran out of memory. Unknown verdicts say none."""
    out = list(_VERDICT_CLASSES.get(verdict, ()))
    if set(out) & _HANG_KINDS:
        out.append("hang")
    if any(_CLASS_PATTERNS[0][1].search(e.lower()) for e in errors):
        out.append("oom")
    return tuple(c for c in CLASSES if c in out)


def version_similarity(
    ours: Sequence[tuple[str, str]], theirs: Sequence[tuple[str, str]]
) -> float | None:
    """How alike two texts' versions are, over the products both name: 1 for the same
    release, 0.5 for the same minor line, 0 otherwise, averaged; None when they name no
    product in common."""
    mine, other = dict(ours), dict(theirs)
    shared = sorted(set(mine) & set(other))
    if not shared:
        return None
    total = 0.0
    for product in shared:
        a, b = mine[product], other[product]
        if a == b:
            total += 1.0
        elif a.split(".")[:2] == b.split(".")[:2]:
            total += 0.5
    return total / len(shared)


def class_similarity(ours: Sequence[str], theirs: Sequence[str]) -> float | None:
    """1 when two texts share a failure class other than the bare `hang`, 0.5 when they
    share only `hang` (a desync and a plain "stuck" report), 0 when both say a class and
    none is shared (a crash and a hang); None when either says none."""
    if not ours or not theirs:
        return None
    shared = set(ours) & set(theirs)
    if shared - {"hang"}:
        return 1.0
    if shared:
        return 0.5
    return 0.0
