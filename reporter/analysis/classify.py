"""Classify frames and stacks from the rules in `reporter/data/frames.toml`.

Inputs: `Frame`s and stacks (tuples of frames, innermost first). Outputs:
`FrameClass` per frame (collective / wait / generic / library / application /
native) and `StackFacts` per stack: the collective the stack is in, else the
blocking wait, and whether the thread is a generic idle background thread.

A stack is in collective X when a collective frame sits between the top of
the stack and the first application frame (a Python frame that no rule and no
library file claims)::

    all_reduce (torch/distributed/distributed_c10d.py)        collective all_reduce
    wrapper (torch/distributed/c10d_logger.py)                generic
    check_hicache_events (sglang/srt/managers/scheduler.py)   application: scan stops
    -> StackFacts(collective="all_reduce", wait=None, idle=None)

All decisions come from the data file; this module only interprets it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from reporter.core import rules as data_files
from reporter.core.errors import ReporterError
from reporter.model import Frame


class FrameKind(StrEnum):
    """What one frame is, for stack classification."""

    COLLECTIVE = "collective"
    WAIT = "wait"
    GENERIC = "generic"
    LIBRARY = "library"
    APPLICATION = "application"
    NATIVE = "native"


class RuleSection(StrEnum):
    """The tables of frames.toml, in the order rules are tried."""

    COLLECTIVE = "collective"
    WAIT = "wait"
    GENERIC = "generic"
    IDLE = "idle"
    IDLE_LOOP = "idle_loop"
    BOOTSTRAP = "bootstrap"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One compiled frames.toml entry. `name` is None where the short function name serves."""

    id: str
    section: RuleSection
    name: str | None
    specific: bool
    function: Globs | None
    qualname: Globs | None
    file: Globs | None
    native: bool | None
    not_file: Globs | None = None

    def matches(self, short: str, function: str, file: str, native: bool) -> bool:
        """True when every field the rule gives matches this frame."""
        if self.native is not None and self.native != native:
            return False
        if self.function is not None and self.function.fullmatch(short) is None:
            return False
        if self.qualname is not None and self.qualname.fullmatch(function) is None:
            return False
        if self.not_file is not None and self.not_file.search(file) is not None:
            return False
        return self.file is None or self.file.search(file) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameClass:
    """The class of one frame; `name` is the collective or wait name, `rule` its rule id.

    `informative` frames are kept in signatures and loose keys: not generic, and
    not an unclassified native frame.
    """

    kind: FrameKind
    name: str | None = None
    rule: str | None = None
    specific: bool = True
    native: bool = False
    informative: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class IdleMatch:
    """Why a thread counts as a generic idle background thread."""

    rule: str
    label: str
    frame: Frame


@dataclass(frozen=True, slots=True, kw_only=True)
class StackFacts:
    """What a whole stack is doing: `wait` is only set when `collective` is None.

    `site` is the call site: the innermost application frame, where the scan for the
    collective or wait stopped (None when the stack has no application frame).
    `idle_loop` is the innermost application frame an [[idle_loop]] rule claims, and
    `idle_wait` is True when `wait` is a poll or sleep an idle loop blocks in.
    """

    collective: str | None
    wait: str | None
    idle: IdleMatch | None
    site: Frame | None = None
    idle_loop: Frame | None = None
    idle_wait: bool = False

    @property
    def site_text(self) -> str | None:
        """`check_hicache_events (tp_desync.py:124)`: the call site, short."""
        return frame_at(self.site) if self.site is not None else None


def frame_at(frame: Frame) -> str:
    """`function (file.py:line)` with the short function name and the file's basename."""
    base = frame.file.rsplit("/", 1)[-1]
    line = f":{frame.line}" if frame.line is not None else ""
    return f"{frame.short_function} ({base}{line})"


_NATIVE_FILE = re.compile(r"\.(?:so(?:\.[0-9]+)*|c|cc|cpp|cxx|h|hpp|S)$")


def is_native(frame: Frame) -> bool:
    """A `--native` frame: flagged by the parser, an address, a C/C++ file or a shared object."""
    return (
        frame.native
        or frame.function.startswith("0x")
        or "::" in frame.function
        or _NATIVE_FILE.search(frame.file) is not None
    )


def _glob_body(pattern: str) -> str:
    # Only `*` and `?` are special: C++ symbols contain `[` and `]` literally.
    out: list[str] = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    return "".join(out)


class Globs:
    """Names or paths matched against `*`/`?` globs, as one regex would: names whole
    (`fullmatch`), paths by their last components (`search`, anchored at a `/`).

    Globs without a wildcard are compared as strings; the others are compiled into one
    regex on first use. Most globs are plain names, and compiling all of them cost more
    than a small analysis."""

    __slots__ = ("_literal", "_regex", "_source", "_suffixes")

    def __init__(self, globs: Sequence[str], *, path: bool) -> None:
        literal = [g for g in globs if "*" not in g and "?" not in g]
        wild = [g for g in globs if "*" in g or "?" in g]
        self._literal = frozenset(literal)
        self._suffixes = tuple("/" + g for g in literal)
        body = "|".join(f"(?:{_glob_body(g)})" for g in wild)
        # Anchored at a path-component boundary so "threading.py" != "mythreading.py".
        self._source = (f"(?:^|/)(?:{body})$" if path else body) if wild else None
        self._regex: re.Pattern[str] | None = None

    def _wild(self) -> re.Pattern[str] | None:
        if self._regex is None and self._source is not None:
            self._regex = re.compile(self._source, re.DOTALL)
        return self._regex

    def fullmatch(self, name: str) -> bool | None:
        """True when a glob matches all of `name`, else None (as `re.fullmatch`)."""
        if name in self._literal:
            return True
        wild = self._wild()
        return True if wild is not None and wild.fullmatch(name) is not None else None

    def search(self, path: str) -> bool | None:
        """True when a glob matches the end of `path` from a `/` or its start, else None.

        Like the regex's `$`, the end may also be just before a final newline."""
        for text in (path, path[:-1]) if path.endswith("\n") else (path,):
            if text in self._literal or text.endswith(self._suffixes):
                return True
        wild = self._wild()
        return True if wild is not None and wild.search(path) is not None else None


def _name_regex(globs: Sequence[str]) -> Globs:
    return Globs(globs, path=False)


def _file_regex(globs: Sequence[str]) -> Globs:
    return Globs(globs, path=True)


def _globs(entry: dict[str, list[str]], key: str, where: str) -> list[str] | None:
    # The shape (reporter.core.rules) checked the type; an empty list would match nothing.
    value = entry.get(key)
    if value is not None and not value:
        raise ReporterError(f"{where}: `{key}` must be a non-empty list of strings")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSet:
    """All rules of one frames.toml, by section, plus the library file matcher."""

    rules: tuple[Rule, ...]
    library: Globs | None
    idle_waits: frozenset[str] = frozenset()
    """Wait names an idle loop blocks in (`[states] idle_waits`): poll, select, sleep, ..."""
    p2p: tuple[tuple[str, str], ...] = ()
    """(collective name, direction) for point-to-point operations (`[p2p]`): direction is
    `recv`, `send` or `either`."""

    def p2p_direction(self, collective: str | None) -> str | None:
        """`recv`, `send` or `either` when `collective` is point-to-point, else None."""
        if collective is None:
            return None
        return next((d for name, d in self.p2p if name == collective), None)

    def section(self, section: RuleSection) -> tuple[Rule, ...]:
        """The rules of one section in file order."""
        return tuple(r for r in self.rules if r.section is section)


def parse_rules(text: str, *, source: str = "frames.toml") -> RuleSet:
    """Compile the text of a frames.toml; malformed entries raise `ReporterError`.

    Types, required keys and unknown keys are checked by the declared shape
    (`reporter.core.rules.SHAPES`); what a shape cannot say is checked here.
    """
    data = data_files.parse(text, data_files.SHAPES["frames.toml"], source=source)
    rules: list[Rule] = []
    seen: set[str] = set()
    for section in RuleSection:
        for index, entry in enumerate(data.get(section.value, [])):
            where = f"{source}: [[{section.value}]] #{index + 1}"
            rule_id = entry["id"]
            if not rule_id:
                raise ReporterError(f"{where}: needs a string `id`")
            if rule_id in seen:
                raise ReporterError(f"{where}: duplicate id {rule_id!r}")
            seen.add(rule_id)
            function = _globs(entry, "function", where)
            qualname = _globs(entry, "qualname", where)
            files = _globs(entry, "file", where)
            not_files = _globs(entry, "not_file", where)
            if function is None and qualname is None:
                raise ReporterError(f"{where} ({rule_id}): needs `function` or `qualname`")
            name = entry.get("name")
            native = entry.get("native")
            specific = entry.get("specific", True)
            if (
                section in (RuleSection.WAIT, RuleSection.IDLE, RuleSection.IDLE_LOOP)
                and name is None
            ):
                raise ReporterError(f"{where} ({rule_id}): needs a `name`")
            rules.append(
                Rule(
                    id=rule_id,
                    section=section,
                    name=name,
                    specific=specific,
                    function=_name_regex(function) if function else None,
                    qualname=_name_regex(qualname) if qualname else None,
                    file=_file_regex(files) if files else None,
                    native=native,
                    not_file=_file_regex(not_files) if not_files else None,
                )
            )
    library_files = _globs(data.get("library", {}), "file", f"{source}: [library]")
    idle_waits = _globs(data.get("states", {}), "idle_waits", f"{source}: [states]")
    p2p: list[tuple[str, str]] = []
    for direction in ("recv", "send", "either"):
        names = _globs(data.get("p2p", {}), direction, f"{source}: [p2p]")
        for op in names or ():
            if any(op == known for known, _ in p2p):
                raise ReporterError(f"{source}: [p2p]: {op!r} is listed twice")
            p2p.append((op, direction))
    return RuleSet(
        rules=tuple(rules),
        library=_file_regex(library_files) if library_files else None,
        idle_waits=frozenset(idle_waits or ()),
        p2p=tuple(p2p),
    )


_SECTION_KIND = {
    RuleSection.COLLECTIVE: FrameKind.COLLECTIVE,
    RuleSection.WAIT: FrameKind.WAIT,
    RuleSection.GENERIC: FrameKind.GENERIC,
}


class Classifier:
    """Classifies frames with a `RuleSet`, caching by (function, file, native).

    Only distinct stacks reach the classifier, and those share most frames, so
    the cache keeps rule matching off the hot path.
    """

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._frame_rules = tuple(
            r
            for r in rules.rules
            if r.section not in (RuleSection.IDLE, RuleSection.IDLE_LOOP, RuleSection.BOOTSTRAP)
        )
        self._bootstrap_rules = rules.section(RuleSection.BOOTSTRAP)
        self._bootstrap_cache: dict[tuple[str, str], str | None] = {}
        self._idle_rules = rules.section(RuleSection.IDLE)
        self._idle_loop_rules = rules.section(RuleSection.IDLE_LOOP)
        # Keyed by the parser's native flag: is_native() derives the rest from the key.
        self._cache: dict[tuple[str, str, bool], FrameClass] = {}
        self._idle_cache: dict[tuple[str, str], Rule | None] = {}
        self._idle_loop_cache: dict[tuple[str, str], bool] = {}
        # Keyed like `_cache`: Flight Recorder places ask every rank's top frames.
        self._match_cache: dict[tuple[str, str, bool], Rule | None] = {}

    def classify(self, frame: Frame) -> FrameClass:
        """The class of one frame (first matching rule, sections in file order)."""
        key = (frame.function, frame.file, frame.native)
        found = self._cache.get(key)
        if found is None:
            found = self._classify(frame, is_native(frame))
            self._cache[key] = found
        return found

    def match(self, frame: Frame) -> Rule | None:
        """The collective / wait / generic rule that claims `frame`, if any."""
        key = (frame.function, frame.file, frame.native)
        try:
            return self._match_cache[key]
        except KeyError:
            pass
        native = is_native(frame)
        short = frame.short_function
        found = next(
            (r for r in self._frame_rules if r.matches(short, frame.function, frame.file, native)),
            None,
        )
        self._match_cache[key] = found
        return found

    def _classify(self, frame: Frame, native: bool) -> FrameClass:
        rule = self.match(frame)
        if rule is not None:
            return FrameClass(
                kind=_SECTION_KIND[rule.section],
                name=rule.name or frame.short_function,
                rule=rule.id,
                specific=rule.specific,
                native=native,
                informative=rule.section is not RuleSection.GENERIC,
            )
        if native:
            return FrameClass(kind=FrameKind.NATIVE, native=True, informative=False)
        library = self.rules.library
        if library is not None and library.search(frame.file) is not None:
            return FrameClass(kind=FrameKind.LIBRARY)
        return FrameClass(kind=FrameKind.APPLICATION)

    def bootstrap_rule(self, frame: Frame) -> str | None:
        """The id of the [[bootstrap]] rule claiming `frame` (how the process was started:
        `<module>`, runpy, mp.spawn, torchrun's agent), or None."""
        key = (frame.function, frame.file)
        if key in self._bootstrap_cache:
            return self._bootstrap_cache[key]
        short = frame.short_function
        found = next(
            (
                r.id
                for r in self._bootstrap_rules
                if r.matches(short, frame.function, frame.file, is_native(frame))
            ),
            None,
        )
        self._bootstrap_cache[key] = found
        return found

    def idle_rule(self, frame: Frame) -> Rule | None:
        """The [[idle]] rule matching `frame`, if any."""
        key = (frame.function, frame.file)
        if key in self._idle_cache:
            return self._idle_cache[key]
        short = frame.short_function
        found = next(
            (r for r in self._idle_rules if r.matches(short, frame.function, frame.file, False)),
            None,
        )
        self._idle_cache[key] = found
        return found

    def describe(
        self, frames: Sequence[Frame], classes: Sequence[FrameClass] | None = None
    ) -> StackFacts:
        """Collective, wait and idle facts of one stack (innermost first); pass `classes`
        when the caller has already classified the frames."""
        if classes is None:
            classes = [self.classify(f) for f in frames]
        # The segment the hang lives in: from the top down to the first application frame.
        end = next(
            (i for i, c in enumerate(classes) if c.kind is FrameKind.APPLICATION), len(classes)
        )
        collective: str | None = None
        fallback: str | None = None
        wait: str | None = None
        # Outermost wins inside the segment: `broadcast_object_list` says more than
        # the `broadcast` it calls, `Queue.get` more than its `Condition.wait`.
        for c in classes[:end]:
            if c.kind is FrameKind.COLLECTIVE:
                if c.specific:
                    collective = c.name
                else:
                    fallback = c.name
            elif c.kind is FrameKind.WAIT:
                wait = c.name
        collective = collective or fallback
        wait = None if collective else wait
        loop = None
        for frame, c in zip(frames, classes, strict=True):
            if c.kind is FrameKind.APPLICATION and self._is_idle_loop(frame):
                loop = frame
                break
        return StackFacts(
            collective=collective,
            wait=wait,
            idle=self._idle(frames, classes),
            site=frames[end] if end < len(frames) else None,
            idle_loop=loop,
            idle_wait=wait is not None and wait in self.rules.idle_waits,
        )

    def _is_idle_loop(self, frame: Frame) -> bool:
        # Cached per (function, file): distinct stacks share most of their frames.
        key = (frame.function, frame.file)
        found = self._idle_loop_cache.get(key)
        if found is None:
            short = frame.short_function
            found = any(
                r.matches(short, frame.function, frame.file, False) for r in self._idle_loop_rules
            )
            self._idle_loop_cache[key] = found
        return found

    def _idle(self, frames: Sequence[Frame], classes: Sequence[FrameClass]) -> IdleMatch | None:
        for frame, c in zip(frames, classes, strict=True):
            if c.native or c.kind is FrameKind.WAIT or c.kind is FrameKind.GENERIC:
                continue
            rule = self.idle_rule(frame)
            if rule is None:
                return None
            return IdleMatch(rule=rule.id, label=rule.name or rule.id, frame=frame)
        return None

    def informative(self, frames: Iterable[Frame]) -> tuple[Frame, ...]:
        """The frames kept by signatures and loose keys, in the given order."""
        return tuple(f for f in frames if self.classify(f).informative)


def load_rules() -> RuleSet:
    """The rules shipped in the package (`reporter/data/frames.toml`)."""
    return parse_rules(data_files.read_text("frames.toml"), source="reporter/data/frames.toml")


@cache
def default_classifier() -> Classifier:
    """One shared classifier over the packaged rules."""
    return Classifier(load_rules())
