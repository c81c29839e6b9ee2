"""Stacks and error lines pasted in issue text, found with the evidence parsers.

Input: the Markdown text of an issue (or of a free-text query). Output: `Extracted`,
the informative frame keys of each distinct stack (innermost first) and the error
lines, normalised. Stacks are found inside code fences and outside them: the fence
lines are blanked (keeping line numbers) and the py-spy text, py-spy JSON,
faulthandler and Python traceback parsers each read the text when a cheap marker
says they might find something. By example, an issue body holding::

    Thread 26038 (idle): "MainThread"
        all_reduce (torch/distributed/distributed_c10d.py:3252)
        wrapper (torch/distributed/c10d_logger.py:83)
        check_hicache_events (sglang/srt/managers/scheduler.py:123)

gives `Extracted(stacks=(("all_reduce", "check_hicache_events"),), errors=())`: the
c10d logger wrapper is a generic frame (reporter/data/frames.toml) and is dropped.
Threads idle by design (watchdogs, queue feeders, tqdm monitors) are dropped whole:
every dump of a service shows them, so they would make unrelated issues look alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reporter.analysis.classify import Classifier, default_classifier, is_native
from reporter.evidence import faulthandler, pyspy, traceback
from reporter.model import Frame, ParseResult

# Native frames (`py-spy --native`, C/C++ symbols) keep their name behind this mark: the
# ranker counts one where both stacks show it and never against a match where only one
# does (a dump taken with `--native` must match the same hang dumped without it).
NATIVE_MARK = "~"
MAX_STACKS = 12
MAX_KEYS = 32
MAX_ERRORS = 6
# Bodies are cut here before parsing: a pasted multi-megabyte log says nothing more.
MAX_TEXT_CHARS = 256 * 1024

_FENCE_RE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_FENCE_LINE_RE = re.compile(r"[ \t]*(?:`{3,}|~{3,})")
_JSON_START_RE = re.compile(r"\s*\[\s*\{")
_PYSPY_MARK_RE = re.compile(
    r"Thread (?:\d+|0x[0-9A-Fa-f]+)(?: \([a-z+]+\))?(?::|\s*$)|Process \d+: ", re.MULTILINE
)
_FAULT_MARK = "(most recent call first)"
_TRACEBACK_MARK = "Traceback (most recent call last)"
_EXC_LINE_RE = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Timeout|Failure|Interrupt))"
    r": ?(\S[^\n]{0,300})?"
)
_PHRASE_RE = re.compile(
    r"(?i)\b(watchdog caught collective operation timeout|nccl (?:error|warn)|cuda error"
    r"|connection (?:closed|reset) by peer|fatal python error)\b[^\n]{0,200}"
)
_HEX_RE = re.compile(r"0x[0-9a-f]+")
# Starts only where a run of path characters starts, and never gives a part back: linear.
_PATH_RE = re.compile(r"(?<![\w./-])(?:[\w.-]*+/)++([\w.-]++)")
_NUMBER_RE = re.compile(r"\d+")
_SPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Extracted:
    """What one text holds: stacks as frame keys (innermost first) and normalised errors."""

    stacks: tuple[tuple[str, ...], ...] = ()
    errors: tuple[str, ...] = ()


def frame_key(frame: Frame) -> str | None:
    """The name a frame is matched by across issues: the short function name.

    Files are left out on purpose: the same function shows up under site-packages,
    a checkout or a reproducer script. Native symbols keep their last two `::` parts
    behind `NATIVE_MARK` (`~RecvWork::wait`). None for frames that name nothing
    (`<module>`, `<lambda>`, bare addresses).
    """
    if is_native(frame):
        name = frame.function.split("(", 1)[0].strip()
        if not name or name.startswith("0x"):
            return None
        return NATIVE_MARK + "::".join(name.split("::")[-2:])
    short = frame.short_function.strip()
    if not short or short.startswith("<"):
        return None
    return short


def stack_keys(frames: Sequence[Frame], classifier: Classifier | None = None) -> tuple[str, ...]:
    """Informative frame keys of one stack (innermost first), recursion collapsed, capped."""
    classifier = classifier or default_classifier()
    keys: list[str] = []
    for frame in frames:
        if not classifier.classify(frame).informative:
            continue
        key = frame_key(frame)
        if key is None or (keys and keys[-1] == key):
            continue
        keys.append(key)
        if len(keys) == MAX_KEYS:
            break
    return tuple(keys)


def extract(text: str) -> Extracted:
    """Stacks and errors pasted in `text` (Markdown); never raises on odd input."""
    text = text[:MAX_TEXT_CHARS]
    plain = _FENCE_RE.sub("", text)
    results: list[ParseResult] = []
    if _PYSPY_MARK_RE.search(plain):
        results.append(pyspy.parse_text(plain, source="issue"))
    for block in _json_blocks(text):
        if '"frames"' in block:
            results.append(pyspy.parse_json(block, source="issue"))
    if _FAULT_MARK in plain:
        results.append(faulthandler.parse(plain, source="issue"))
    if _TRACEBACK_MARK in plain:
        results.append(traceback.parse(plain, source="issue"))
    classifier = default_classifier()
    stacks: dict[tuple[str, ...], None] = {}
    headlines: list[str] = []
    for result in results:
        for dump in result.dumps:
            if dump.headline:
                headlines.append(dump.headline)
            for thread in dump.threads:
                if not thread.frames or classifier.describe(thread.frames).idle is not None:
                    continue
                keys = stack_keys(thread.frames, classifier)
                if keys and len(stacks) < MAX_STACKS:
                    stacks.setdefault(keys, None)
    return Extracted(stacks=tuple(stacks), errors=_errors(headlines, plain))


def _json_blocks(text: str) -> list[str]:
    """The fenced blocks of `text` that hold a JSON list of objects (py-spy `--json`).

    One pass over the lines, fences paired in order: a lazy `(...)` search up to the next
    fence rescanned the rest of the text from every unclosed opening.
    """
    blocks: list[str] = []
    inside: list[str] | None = None
    for line in text.splitlines(keepends=True):
        fence = _FENCE_LINE_RE.match(line) is not None
        if inside is None:
            if fence:
                inside = []
            continue
        if fence:
            body = "".join(inside)
            if _JSON_START_RE.match(body):
                blocks.append(body)
            inside = None
            continue
        inside.append(line)
    return blocks


def _errors(headlines: Iterable[str], text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    candidates = [*headlines]
    candidates.extend(m.group(0) for m in _EXC_LINE_RE.finditer(text) if m.group(2))
    candidates.extend(m.group(0) for m in _PHRASE_RE.finditer(text))
    for raw in candidates:
        norm = normalize_error(raw)
        # A phrase match inside an exception line already found adds nothing.
        if len(norm) >= 8 and not any(norm in seen for seen in found):
            found.setdefault(norm, None)
        if len(found) == MAX_ERRORS:
            break
    return tuple(found)


def normalize_error(message: str) -> str:
    """An error line with its run-specific parts masked, for fuzzy comparison.

    `RuntimeError: [/opt/gloo/pair.cc:534] Connection closed by peer [10.0.0.7]:4021`
    -> `runtimeerror: [pair.cc:n] connection closed by peer [n.n.n.n]:n`.
    """
    # Markdown around a quoted error (`...`, trailing full stops) is not part of it.
    text = message.strip().strip("`*_.,;: ").lower()
    text = _HEX_RE.sub("hex", text)
    text = _PATH_RE.sub(r"\1", text)
    text = _NUMBER_RE.sub("n", text)
    return _SPACE_RE.sub(" ", text)[:200]
