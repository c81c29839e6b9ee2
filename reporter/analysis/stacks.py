"""Intern stacks so that each distinct stack is examined once.

Input: frame tuples (innermost first) from `ThreadStack.frames`. Output: one
`StackInfo` per distinct stack (function, file and line of every frame), with
integer ids for the three similarity levels, the classifier's facts and the
informative frames. Thousands of ranks mostly repeat a handful of stacks, so
the per-thread cost is one C-level key build and one dict lookup::

    table = StackTable(default_classifier())
    info = table.intern(thread.frames)
    info.key(Similarity.LINES_IGNORED)   # -> small int, equal for equal stacks
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from pathlib import PurePosixPath

from reporter.analysis.classify import Classifier, FrameClass, IdleMatch, StackFacts
from reporter.model import Frame, Similarity

_EXACT = attrgetter("function", "file", "line")


@dataclass(frozen=True, slots=True, kw_only=True)
class StackInfo:
    """One distinct stack. `frames` innermost first; `informative` likewise."""

    exact_id: int
    lines_ignored_id: int
    loose_id: int
    frames: tuple[Frame, ...]
    informative: tuple[Frame, ...]
    facts: StackFacts
    ident: tuple[object, ...] | None = None
    """The collective's operation and call site (`progress.collective_identity`), worked out
    once per distinct stack: thousands of ranks ask it of a few stacks."""
    site_key: tuple[str, str] | None = None
    """(short function, file) of `facts.site`; None without a site."""
    loop_key: tuple[str, str] | None = None
    """(short function, file) of `facts.idle_loop`; None without one."""

    def key(self, similarity: Similarity) -> int:
        """The id that equal stacks share at `similarity`."""
        if similarity is Similarity.EXACT:
            return self.exact_id
        if similarity is Similarity.LOOSE:
            return self.loose_id
        return self.lines_ignored_id


class StackTable:
    """Interns stacks; ids are dense ints assigned in first-seen order."""

    def __init__(self, classifier: Classifier) -> None:
        self.classifier = classifier
        self._exact: dict[tuple[tuple[str, str, int | None], ...], StackInfo] = {}
        self._by_ids: dict[tuple[int, ...], tuple[tuple[Frame, ...], StackInfo]] = {}
        self._by_tuple: dict[int, tuple[tuple[Frame, ...], StackInfo]] = {}
        self._lines_ignored: dict[tuple[tuple[str, str], ...], int] = {}
        self._loose: dict[tuple[tuple[str, str], ...], int] = {}
        # Per distinct (function, file, native): the line-free key and the frame's class.
        self._frames: dict[tuple[str, str, bool], tuple[tuple[str, str], FrameClass]] = {}
        self._shapes: dict[tuple[tuple[str, str, bool], ...], _Shape] = {}

    def intern(self, frames: tuple[Frame, ...]) -> StackInfo:
        """The `StackInfo` of `frames`, built on first sight."""
        # The text parser shares one frames tuple per distinct thread block: the tuple's
        # identity is the cheapest key (the entry keeps the tuple alive, so no other object
        # takes its id while the table lives).
        same = self._by_tuple.get(id(frames))
        if same is not None:
            return same[1]
        # Parsers share one `Frame` per distinct frame line, so the frames' identities
        # are the next cheapest key. The entry keeps its frames alive: no other frame can
        # take one of their ids while the table lives, so an identity hit is the same stack.
        ids = tuple(map(id, frames))
        found = self._by_ids.get(ids)
        if found is None:
            key = tuple(map(_EXACT, frames))
            info = self._exact.get(key)
            if info is None:
                info = self._build(frames, key)
            found = (frames, info)
            self._by_ids[ids] = found
        self._by_tuple[id(frames)] = (frames, found[1])
        return found[1]

    def name_key(self, frame: Frame) -> tuple[str, str]:
        """(short function, short file): a frame with its line number ignored."""
        return self._frame(frame)[0]

    def _frame(self, frame: Frame) -> tuple[tuple[str, str], FrameClass]:
        key = (frame.function, frame.file, frame.native)
        found = self._frames.get(key)
        if found is None:
            found = (
                (frame.short_function, short_file(frame.file)),
                self.classifier.classify(frame),
            )
            self._frames[key] = found
        return found

    def _build(
        self, frames: tuple[Frame, ...], key: tuple[tuple[str, str, int | None], ...]
    ) -> StackInfo:
        # Stacks that differ only in line numbers share everything but their frames: the
        # classes, ids and facts are worked out once per shape, the frames put back in.
        shape_key = tuple(map(_SHAPE, frames))
        shape = self._shapes.get(shape_key)
        if shape is None:
            shape = self._shapes[shape_key] = self._shape(frames)
        facts = shape.facts
        if shape.first is not frames and (
            shape.site is not None or shape.loop is not None or shape.idle is not None
        ):
            idle = facts.idle
            facts = StackFacts(
                collective=facts.collective,
                wait=facts.wait,
                idle=(
                    IdleMatch(rule=idle.rule, label=idle.label, frame=frames[shape.idle])
                    if idle is not None and shape.idle is not None
                    else idle
                ),
                site=frames[shape.site] if shape.site is not None else None,
                idle_loop=frames[shape.loop] if shape.loop is not None else None,
                idle_wait=facts.idle_wait,
            )
        info = StackInfo(
            exact_id=len(self._exact),
            lines_ignored_id=shape.lines_ignored_id,
            loose_id=shape.loose_id,
            frames=frames,
            informative=tuple([frames[i] for i in shape.informative]),
            facts=facts,
            ident=shape.ident,
            site_key=shape.site_key,
            loop_key=shape.loop_key,
        )
        self._exact[key] = info
        return info

    def _shape(self, frames: tuple[Frame, ...]) -> _Shape:
        per_frame = [self._frame(f) for f in frames]
        classes = [c for _, c in per_frame]
        named = tuple([n for n, _ in per_frame])
        loose = tuple([n for n, c in per_frame if c.informative])
        facts = self.classifier.describe(frames, classes)
        site, loop = facts.site, facts.idle_loop
        return _Shape(
            first=frames,
            lines_ignored_id=self._lines_ignored.setdefault(named, len(self._lines_ignored)),
            loose_id=self._loose.setdefault(loose, len(self._loose)),
            informative=tuple([i for i, c in enumerate(classes) if c.informative]),
            facts=facts,
            site=_index(frames, site),
            loop=_index(frames, loop),
            idle=_index(frames, facts.idle.frame) if facts.idle is not None else None,
            ident=_collective_ident(facts),
            site_key=(site.short_function, site.file) if site is not None else None,
            loop_key=(loop.short_function, loop.file) if loop is not None else None,
        )


_SHAPE = attrgetter("function", "file", "native")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shape:
    """What stacks equal but for their line numbers share; `site`, `loop` and `idle` index
    the frames `facts` names (`first` holds the frames it was worked out from)."""

    first: tuple[Frame, ...]
    lines_ignored_id: int
    loose_id: int
    informative: tuple[int, ...]
    facts: StackFacts
    site: int | None
    loop: int | None
    idle: int | None
    ident: tuple[object, ...] | None
    site_key: tuple[str, str] | None
    loop_key: tuple[str, str] | None


def _index(frames: tuple[Frame, ...], frame: Frame | None) -> int | None:
    """Where `frame` (one of `frames`, by identity) sits; the first place it does is the
    one the classifier named, as every place of one object has one class."""
    if frame is None:
        return None
    return next(i for i, f in enumerate(frames) if f is frame)


def _collective_ident(facts: StackFacts) -> tuple[object, ...] | None:
    if facts.collective is None:
        return None
    site = facts.site
    if site is None:
        return (facts.collective,)
    # Function and file, not the line: ranks running one code base call one site from one
    # line, and line numbers are exactly what differs between two captures of a version.
    return (facts.collective, site.short_function, site.file.rsplit("/", 1)[-1])


def short_file(path: str) -> str:
    """The last two path parts, as `Frame.short_file` computes them."""
    parts = PurePosixPath(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path
