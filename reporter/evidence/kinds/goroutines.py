"""Parse Go goroutine dumps (docs/formats.md section 3) into `GoroutineDump`s.

Input: the file's text and the name to cite; nothing here reads files. Accepted:
`runtime.Stack(buf, true)` and `/debug/pprof/goroutine?debug=2` tracebacks,
SIGQUIT dumps (with `fp= sp= pc=` and the register block), unrecovered panics
and `fatal error:` throws, and the aggregated `?debug=1` profile. By example::

    goroutine 41 [select, 12 minutes]:
    net/http.(*persistConn).roundTrip(0xc0001b2000, 0xc0003d4100)
        /usr/lib/go-1.19/src/net/http/transport.go:2620 +0x974
    created by main.startAgents in goroutine 1
        /srv/agents/main.go:88 +0x1d2

(location lines start with a tab in the real output) gives `Goroutine(id=41, state="select", wait_minutes=12, frames=(GoFrame(
function="net/http.(*persistConn).roundTrip", args="0xc0001b2000, 0xc0003d4100",
file=".../transport.go", line=2620),), created_by=GoFrame(function="main.startAgents",
...), parent_id=1)`. Newer headers (`goroutine 1 gp=0x... m=nil [chan send]:`),
inlined frames (`(...)`, no `+0x`), elision markers and log prefixes in front of
every line (learned from the first goroutine header) are handled. A headline
(`SIGQUIT: quit`, `panic: ...`, `fatal error: ...`, `goroutine profile: total N`)
or a goroutine id seen twice starts the next dump. Lines that fit nowhere become
warnings with file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from reporter.evidence._text import LinePrefix, Unrecognised, clean_lines, stamp_and_label
from reporter.evidence.kinds.interface import (
    FieldMerge,
    KindEntry,
    SniffStep,
    dated,
    flat,
    sniffed,
)
from reporter.model import (
    EvidenceKind,
    GoDumpForm,
    GoFrame,
    Goroutine,
    GoroutineDump,
    Location,
    ParseResult,
    ParseWarning,
)

_WHAT = "a Go goroutine dump"
_HEADER_RE = re.compile(
    r"goroutine (\d+)(?: gp=0x[0-9a-fA-F]+ m=(?:\d+|nil)(?: mp=0x[0-9a-fA-F]+)?)? \[(.*)\]:\s*\Z"
)
_HEADER_SEARCH_RE = re.compile(r"goroutine \d+ (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[")
_MINUTES_RE = re.compile(r"(\d+) minutes?\Z")
_LOCATION_RE = re.compile(r"\t(.+?):(\d+)(?: \+0x[0-9a-fA-F]+)?(?: fp=.*)?\s*\Z")
# Greedy to the end, the optional parts cut off in code (`_tail`): a lazy `(.*?)...\s*\Z`
# retries the tail at every character of a long line.
_LOCATION_NO_LINE_RE = re.compile(r"\t(\S.*)\Z")
_OFFSET_TAIL_RE = re.compile(r" \+0x[0-9a-fA-F]++\Z")
_GOROUTINE_TAIL_RE = re.compile(r" in goroutine (\d{1,18})\Z")
_CREATED_RE = re.compile(r"created by (\S.*)\Z")
_ELIDED_RE = re.compile(r"\.\.\.(?:additional frames elided|\d+ frames elided)\.\.\.\s*\Z")
_PROFILE_RE = re.compile(r"goroutine profile: total (\d+)\s*\Z")
_STANZA_RE = re.compile(r"(\d+) @(?: 0x[0-9a-fA-F]+)+\s*\Z")
_STANZA_FRAME_RE = re.compile(
    r"#\s+0x[0-9a-fA-F]+\s+(\S+?)(?:\+0x[0-9a-fA-F]+)?\s+(\S.*?):(\d+)\s*\Z"
)
_LABELS_RE = re.compile(r"#\s*labels: \{(.*)\}\s*\Z")
_LABEL_PAIR_RE = re.compile(r'"((?:[^"\\]|\\.)*)":"((?:[^"\\]|\\.)*)"')
_REGISTER_RE = re.compile(
    r"(?:r[a-z0-9]{1,3}|e[a-z]{2}|rip|rflags|eflags|cs|fs|gs|pc|lr|sp|fp)\s+0x[0-9a-fA-F]+\s*\Z"
)
_HEADLINES: tuple[tuple[str, GoDumpForm], ...] = (
    ("SIGQUIT: ", GoDumpForm.SIGQUIT),
    ("panic: ", GoDumpForm.PANIC),
    ("fatal error: ", GoDumpForm.FATAL),
)
# Lines of a crash preamble that carry nothing to keep.
_PREAMBLE_RE = re.compile(
    r"PC=0x[0-9a-fA-F]+ m=\d+ sigcode=\d+"
    r"|\[signal .*\]"
    r"|\[recovered\]"
    r"|\tpanic: .*"
    r"|runtime: .*"
    r"|exit status \d+"
    r"|-----.*"
    r"|\s*\Z"
)


@dataclass(slots=True)
class _Open:
    """A goroutine being read."""

    id: int | None
    state: str
    minutes: int | None
    locked: bool
    source: Location
    count: int = 1
    frames: list[GoFrame] = field(default_factory=list)
    created_by: GoFrame | None = None
    parent: int | None = None
    elided: bool = False
    labels: tuple[tuple[str, str], ...] = ()
    pending: tuple[str, str, int] | None = None
    """A function line waiting for its location line: (function, args, line number)."""


@dataclass(slots=True)
class _Dump:
    form: GoDumpForm
    headline: str
    source: Location
    goroutines: list[Goroutine] = field(default_factory=list)
    ids: set[int] = field(default_factory=set)
    captured_at_text: str = ""


_SNIFF_RE = re.compile(
    r"(?m)^(?:.*[\s|\]:])?(?:goroutine \d+ (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[[^\]\n]*\]:\s*$"
    r"|goroutine profile: total \d+\s*$)"
)


def _tail(text: str, tail: re.Pattern[str]) -> tuple[str, str]:
    """`text` without a `tail` it ends with, and the tail's first group ("" without one)."""
    found = tail.search(text, max(0, len(text) - 64))
    if found is None:
        return text, ""
    return text[: found.start()].rstrip(), (found.group(1) if found.groups() else "")


def sniff(head: str) -> bool:
    """True when `head` holds a goroutine header (`goroutine 7 [select]:`) or a debug=1 profile."""
    return _SNIFF_RE.search(head) is not None


def parse(text: str, *, source: str) -> ParseResult:
    """Every goroutine dump in `text`; unknown lines become warnings, nothing raises."""
    return _Parser(source).run(clean_lines(text))


def split_call(text: str) -> tuple[str, str]:
    """`pkg.(*T).m(0x1, {0x2, 0x3})` -> (`pkg.(*T).m`, `0x1, {0x2, 0x3}`); no parentheses: (text, "")."""
    text = text.rstrip()
    if not text.endswith(")"):
        return text, ""
    depth = 0
    for at in range(len(text) - 1, -1, -1):
        char = text[at]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                # `main.(*T)` alone: the parentheses are the receiver, not arguments.
                if at == 0 or text[at - 1] == ".":
                    return text, ""
                return text[:at], text[at + 1 : -1]
    return text, ""


class _Parser:
    """One pass over the lines; `_dump` and `_open` hold what is being built."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.dumps: list[GoroutineDump] = []
        self.warnings: list[ParseWarning] = []
        self.odd = Unrecognised(source, _WHAT)
        self._dump: _Dump | None = None
        self._open: _Open | None = None
        self._prefix: LinePrefix | None = None
        self._stamp_text = ""

    def run(self, lines: list[str]) -> ParseResult:
        self._learn_prefix(lines)
        for number, raw in enumerate(lines, start=1):
            line = self._strip(raw)
            self._line(number, line)
        self._close_goroutine()
        self._close_dump()
        self.odd.flush()
        warnings = sorted(
            [*self.warnings, *self.odd.warnings], key=lambda w: (w.source.line, w.message)
        )
        return ParseResult(goroutine_dumps=tuple(self.dumps), warnings=tuple(warnings))

    # ----------------------------------------------------------------- prefixes

    def _learn_prefix(self, lines: list[str]) -> None:
        """A log prefix in front of the first header (`Jul 14 17:55:01 host agent[9]: `)."""
        for line in lines[:5000]:
            match = _HEADER_SEARCH_RE.search(line)
            if match is None:
                continue
            if match.start() > 0:
                prefix = line[: match.start()]
                if prefix[-1] in " |]:\t":
                    self._prefix = LinePrefix(prefix)
                    self._stamp_text = prefix
            return

    def _strip(self, raw: str) -> str:
        if self._prefix is None:
            return raw
        rest = self._prefix.strip(raw)
        return raw if rest is None else rest

    # ----------------------------------------------------------------- lines

    def _line(self, number: int, line: str) -> None:
        where = Location(path=self.source, line=number)
        header = _HEADER_RE.match(line)
        if header:
            self._header(header, where)
            return
        if self._open is not None and self._goroutine_line(number, line, where):
            return
        if not line.strip():
            self._close_goroutine()
            return
        if self._headline(line, where):
            return
        if self._stanza(line, where):
            return
        if _REGISTER_RE.match(line.strip()) or _PREAMBLE_RE.fullmatch(line):
            self._close_goroutine()
            return
        self.odd.add(number, line)

    def _header(self, match: re.Match[str], where: Location) -> None:
        self._close_goroutine()
        gid = int(match.group(1))
        if self._dump is not None and gid in self._dump.ids:
            # The same goroutine again: the next dump of the process begins.
            self._close_dump()
        if self._dump is None:
            self._dump = _Dump(form=GoDumpForm.TRACEBACK, headline="", source=where)
        self._dump.ids.add(gid)
        state, minutes, locked = _state(match.group(2))
        self._open = _Open(id=gid, state=state, minutes=minutes, locked=locked, source=where)

    def _goroutine_line(self, number: int, line: str, where: Location) -> bool:
        """A frame, location, `created by` or elision line of the open goroutine."""
        current = self._open
        assert current is not None
        if line.startswith("\t") and current.pending is not None:
            location = _LOCATION_RE.match(line)
            function, args, _at = current.pending
            current.pending = None
            if location:
                frame = GoFrame(
                    function=function,
                    args=args,
                    file=location.group(1),
                    line=int(location.group(2)),
                )
            else:
                bare = _LOCATION_NO_LINE_RE.match(line)
                file = _tail(bare.group(1).rstrip(), _OFFSET_TAIL_RE)[0] if bare else ""
                frame = GoFrame(function=function, args=args, file=file)
                self.odd.warn(number, f"location without a line number: {line.strip()!r}")
            if current.created_by is not None and current.created_by.function == function:
                current.created_by = frame
            else:
                current.frames.append(frame)
            return True
        if not line or line[0].isspace():
            return False
        if current.pending is not None:
            # A function line with no location after it: keep the frame, say so.
            function, args, at = current.pending
            current.frames.append(GoFrame(function=function, args=args))
            current.pending = None
            self.odd.warn(at, f"frame {function} has no location line")
        if _ELIDED_RE.match(line):
            current.elided = True
            return True
        created = _CREATED_RE.match(line)
        if created:
            function, parent = _tail(created.group(1).rstrip(), _GOROUTINE_TAIL_RE)
            current.created_by = GoFrame(function=function)
            current.parent = int(parent) if parent else None
            current.pending = (function, "", number)
            return True
        if any(line.startswith(word) for word, _ in _HEADLINES) or _PROFILE_RE.match(line):
            return False
        if _looks_like_call(line):
            function, args = split_call(line)
            current.pending = (function, args, number)
            return True
        return False

    def _headline(self, line: str, where: Location) -> bool:
        for word, form in _HEADLINES:
            if line.startswith(word):
                self._close_goroutine()
                self._close_dump()
                self._dump = _Dump(form=form, headline=line.strip(), source=where)
                return True
        profile = _PROFILE_RE.match(line)
        if profile:
            self._close_goroutine()
            self._close_dump()
            self._dump = _Dump(form=GoDumpForm.AGGREGATED, headline=line.strip(), source=where)
            return True
        return False

    def _stanza(self, line: str, where: Location) -> bool:
        """debug=1: `N @ 0x...` opens a stanza; `#\\t0x..\\tfunc+0x..\\tfile:line` are frames."""
        stanza = _STANZA_RE.match(line)
        if stanza:
            self._close_goroutine()
            if self._dump is None:
                self._dump = _Dump(form=GoDumpForm.AGGREGATED, headline="", source=where)
            self._open = _Open(
                id=None,
                state="",
                minutes=None,
                locked=False,
                source=where,
                count=int(stanza.group(1)),
            )
            return True
        if self._open is None or self._open.id is not None or not line.startswith("#"):
            return False
        labels = _LABELS_RE.match(line)
        if labels:
            self._open.labels = tuple((k, v) for k, v in _LABEL_PAIR_RE.findall(labels.group(1)))
            return True
        frame = _STANZA_FRAME_RE.match(line)
        if frame:
            self._open.frames.append(
                GoFrame(function=frame.group(1), file=frame.group(2), line=int(frame.group(3)))
            )
            return True
        return False

    # ----------------------------------------------------------------- closing

    def _close_goroutine(self) -> None:
        current = self._open
        if current is None:
            return
        self._open = None
        if current.pending is not None:
            function, args, at = current.pending
            if current.created_by is None or current.created_by.function != function:
                current.frames.append(GoFrame(function=function, args=args))
                self.odd.warn(at, f"frame {function} has no location line")
        # `?debug=1` prints no `#` line for a stack that is all runtime (a goroutine that
        # has not run yet shows only runtime.goexit): a record without frames is normal there.
        if not current.frames and current.count == 1 and current.id is not None:
            self.odd.warn(current.source.line, f"goroutine {current.id} has no frames (cut?)")
        assert self._dump is not None
        self._dump.goroutines.append(
            Goroutine(
                id=current.id,
                state=current.state,
                wait_minutes=current.minutes,
                locked_to_thread=current.locked,
                frames=tuple(current.frames),
                created_by=current.created_by,
                parent_id=current.parent,
                elided=current.elided,
                count=current.count,
                labels=current.labels,
                source=current.source,
            )
        )

    def _close_dump(self) -> None:
        dump = self._dump
        if dump is None:
            return
        self._dump = None
        if not dump.goroutines:
            self.warnings.append(
                ParseWarning(
                    source=dump.source,
                    message=f"{dump.headline or 'dump'}: no goroutines follow (cut short?)",
                )
            )
            return
        stamp, _label = stamp_and_label(self._stamp_text) if self._stamp_text else (None, None)
        self.dumps.append(
            GoroutineDump(
                form=dump.form,
                goroutines=tuple(dump.goroutines),
                headline=dump.headline,
                captured_at=stamp,
                source=dump.source,
            )
        )


def _state(text: str) -> tuple[str, int | None, bool]:
    """`select, 12 minutes, locked to thread` -> ("select", 12, True); `(scan)` is dropped."""
    parts = [p.strip() for p in text.split(",")]
    state = parts[0].removesuffix(" (scan)").strip()
    minutes: int | None = None
    locked = False
    extra: list[str] = []
    for part in parts[1:]:
        match = _MINUTES_RE.match(part)
        if match:
            minutes = int(match.group(1))
        elif part == "locked to thread":
            locked = True
        elif part:
            extra.append(part)
    if extra:
        state = ", ".join([state, *extra])
    return state, minutes, locked


def _looks_like_call(line: str) -> bool:
    """A frame's function line: `pkg.Func(args)` / `pkg.(*T).M(...)` / `main.main()`."""
    if line.startswith(("#", "[", "goroutine ")) or " " in split_call(line)[0]:
        return False
    return "." in line and line.rstrip().endswith(")")


_LATEST = datetime.max.replace(tzinfo=UTC)

# Go client dumps, in capture order where known (stable: file order otherwise).
ENTRY = KindEntry(
    kind=EvidenceKind.GOROUTINES,
    parse=lambda text, read: parse(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.GOROUTINES, SniffStep.DISTINCTIVE, sniff),),
    merges=(
        FieldMerge(
            "goroutine_dumps", stamp=dated, finish=flat(key=lambda g: g.captured_at or _LATEST)
        ),
    ),
    shown="bucketed under Clients",
)
