"""Parse Python tracebacks (`Traceback (most recent call last):`) into `ParseResult`s.

Input is text (a log, an issue body) and the name to cite; nothing here reads files.
Tracebacks print outermost first; the result lists frames innermost first, as every
other parser does. By example::

    Traceback (most recent call last):
      File "/srv/sglang/srt/managers/scheduler.py", line 123, in check_hicache_events
        self.tree_cache.writing_check()
      File "/srv/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
        work.wait()
    RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer

gives one `ProcessDump(pid=None, kind=UNKNOWN, headline="RuntimeError: [gloo/...] ...")`
with one thread (id `traceback`) whose frames are `all_reduce`, `check_hicache_events`.
Chained exceptions (`During handling of the above exception ...`) give one dump each.
A log prefix in front of `Traceback` (`[2026-07-14 08:34:44 TP0] `) is learned from that
line and stripped from the lines after it; source lines, caret markers (`^^^^`) and
`[Previous line repeated N more times]` are skipped; exception-group bars (`  | `) are
looked through.

`kind` is `EvidenceKind.UNKNOWN`: the model has no traceback kind and the bundle loader
does not take tracebacks as evidence; this parser serves frame extraction from issue text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reporter.evidence._text import LinePrefix, clean_lines, warning_at
from reporter.model import (
    EvidenceKind,
    Frame,
    Location,
    ParseResult,
    ParseWarning,
    ProcessDump,
    ThreadStack,
)

THREAD_ID = "traceback"
_START = "Traceback (most recent call last):"
_FRAME_RE = re.compile(r'\s*File "([^"\n]{1,600})", line (\d{1,9}), in (\S[^\n]{0,300})\Z')
# An exception line: a dotted name, then `: message` or nothing. Bounded to stay linear.
_EXC_RE = re.compile(r"([A-Za-z_][\w.]{0,200})(?::(?: (.{0,2000}))?)?\Z")
_SKIP_RE = re.compile(
    r"\s*+(?:[~^\s]++|\[Previous line repeated \d{1,18} more times?\]|\.\.\.)\s*+\Z"
)
# Exception groups (3.11+) draw `  | ` bars and `+-+---- 1 ----` rules in front of lines.
_GROUP_BAR_RE = re.compile(r"(?:\s*[|+](?:-+[+-]*(?: [\d.]+ -+)?)?)+ ?")


@dataclass(slots=True)
class _Trace:
    line: int
    prefix: LinePrefix | None
    frames: list[Frame] = field(default_factory=list)
    headline: str | None = None


def parse(text: str, *, source: str) -> ParseResult:
    """Every traceback found in `text`; never raises on malformed input."""
    lines = clean_lines(text)
    traces: list[_Trace] = []
    warnings: list[ParseWarning] = []
    current: _Trace | None = None
    expect_source = False
    for number, raw in enumerate(lines, start=1):
        at = raw.find(_START)
        if at >= 0:
            current = _Trace(line=number, prefix=_prefix(raw[:at]))
            traces.append(current)
            expect_source = False
            continue
        if current is None:
            continue
        line = _unprefixed(raw, current.prefix)
        if line is None:
            _finish(current, warnings, source)
            current = None
            continue
        line = _without_group_bars(line)
        frame = _FRAME_RE.fullmatch(line)
        if frame is not None:
            current.frames.append(
                Frame(
                    function=frame.group(3).strip(), file=frame.group(1), line=int(frame.group(2))
                )
            )
            expect_source = True
            continue
        if not line.strip() or _SKIP_RE.fullmatch(line):
            continue
        if expect_source and line.startswith("    "):
            # The source line under a frame; only one per frame.
            expect_source = False
            continue
        expect_source = False
        if current.frames:
            stripped = line.strip()
            exc = _EXC_RE.fullmatch(stripped)
            if exc is not None:
                current.headline = stripped
        _finish(current, warnings, source)
        current = None
    if current is not None:
        _finish(current, warnings, source)
    dumps = tuple(_dump(trace, source) for trace in traces if trace.frames)
    return ParseResult(dumps=dumps, warnings=tuple(warnings))


def _prefix(text: str) -> LinePrefix | None:
    """The log prefix in front of `Traceback`; none for indentation and exception-group bars."""
    bare = text.replace("Exception Group", "").strip(" \t|+-")
    return LinePrefix(text) if bare else None


def _unprefixed(raw: str, prefix: LinePrefix | None) -> str | None:
    """The line without the traceback's log prefix; None when the prefix is missing."""
    if prefix is None:
        return raw
    return prefix.strip(raw)


def _without_group_bars(line: str) -> str:
    if not line.lstrip().startswith(("|", "+")):
        return line
    match = _GROUP_BAR_RE.match(line)
    if match is None:
        return line
    return "  " + line[match.end() :]


def _finish(trace: _Trace, warnings: list[ParseWarning], source: str) -> None:
    """Close `trace`; a traceback that never reached its frames is worth a warning."""
    if not trace.frames:
        warnings.append(
            warning_at(source, trace.line, "traceback header without any `File ...` line")
        )


def _dump(trace: _Trace, source: str) -> ProcessDump:
    location = Location(path=source, line=trace.line)
    thread = ThreadStack(
        thread_id=THREAD_ID,
        frames=tuple(reversed(trace.frames)),
        is_current=True,
        source=location,
    )
    return ProcessDump(
        pid=None,
        kind=EvidenceKind.UNKNOWN,
        threads=(thread,),
        headline=trace.headline,
        source=location,
    )
