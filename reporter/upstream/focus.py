"""A draft's evidence, focused on what a maintainer reads once.

`focused` narrows the report's evidence view to the hung instance: its stacks (ranks of
one DP replica in the same state together, `stack_groups`), the engine's own line where a
stack only shows torch or the standard library (`library_frame`), the raw dumps without
arguments or locals, main thread first (`plain_dump`), a timeline without what the
metrics already say, and the changes since the last good run only when the stacks tie
to them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import replace

from reporter.analysis import Analysis
from reporter.analysis.result import RankState, StackClass
from reporter.model import Bundle, Frame, ProcessDump
from reporter.render import issueview
from reporter.render import markdown as md
from reporter.render.answer.waits import members
from reporter.render.issueview import format_dump
from reporter.render.parts import Block, located
from reporter.render.policy import Text, TextPolicy, later
from reporter.upstream.story import Story, mask_path, rank_names, span


def focused(
    bundle: Bundle,
    analysis: Analysis,
    evidence: issueview.EvidenceView,
    story: Story,
    policy: TextPolicy,
) -> issueview.EvidenceView:
    """The evidence a maintainer reads once: the hung instance's stacks (ranks of one DP
    replica in the same state together), the engine's line where the ranks part, raw
    dumps without arguments or locals (the main thread first) in one collapsed block, a
    timeline without the lines the metrics already say, and no merged tree, class table,
    or changes the stacks do not tie to."""
    hung = story.hung_instance
    ev = policy.evidence
    groups = stack_groups(analysis, hung)
    stacks = tuple(
        Block(
            key=f"stack:{group[0].label}",
            title=_group_title(analysis, group, hung, story.moments),
            text=ev(
                f"stack {group[0].label}", "\n".join(located(f, limit=0) for f in group[0].frames)
            ),
        )
        for group in groups
    )
    shown: list[Text] = []
    for group in groups:
        for stack_class in group:
            found = members(analysis, stack_class.instance, stack_class.ranks)
            if found and found[0].snapshots:
                dump = plain_dump(found[0].snapshots)
                shown.append(ev(f"dump {dump.source.path}", mask_path(format_dump(dump))))
    details: list[Block] = []
    if shown:
        details.append(
            Block(
                key="dumps",
                title=f"Raw py-spy dumps ({len(shown)}), one rank per stack above, "
                "main thread first (arguments and locals left out)",
                text=later(_joined_dumps, *shown),
            )
        )
    timeline = _timeline(analysis, policy)
    if timeline is not None:
        details.append(timeline)
    tied = _tied_changes(analysis, hung)
    details.extend(
        b
        for b in evidence.details
        if b.key not in ("tree", "timeline")
        and not b.key.startswith("dump:")
        and (b.key != "changes" or tied)
    )
    steps = evidence.steps
    wedge = analysis.wedge
    if wedge is not None and len(wedge.steps) == len(steps):
        # Said once: a step the metrics paragraph already tells is left out of the list.
        said = " ".join(wedge.summary.split())
        steps = tuple(
            t
            for t, step in zip(steps, wedge.steps, strict=True)
            if " ".join(step.text.split()).rstrip(".") not in said
        )
    return replace(
        evidence,
        classes=(),
        branches=(),
        branch_shared="",
        confidence_notes=(),
        stacks=stacks,
        code=_engine_code(analysis, evidence.code, hung, policy),
        steps=steps,
        details=tuple(details),
    )


def _joined_dumps(*texts: str) -> str:
    return "\n\n".join(texts)


def stack_groups(analysis: Analysis, hung: str | None) -> list[list[StackClass]]:
    """The hung instance's rank classes as the draft shows them: one group per class,
    except that classes of one DP replica that are in the same moving or idle state
    form one group (they are one replica doing one thing, seen at different steps)."""
    dims = {
        p.unit: dict(p.identity.dims)
        for p in analysis.processes
        if p.unit is not None and (hung is None or p.identity.instance == hung)
    }
    groups: list[list[StackClass]] = []
    keyed: dict[tuple[str, int], list[StackClass]] = {}
    for stack_class in analysis.classes:
        if not stack_class.frames or (hung is not None and stack_class.instance != hung):
            continue
        replicas = {dims.get(r, {}).get("DP") for r in stack_class.ranks}
        replica = next(iter(replicas)) if len(replicas) == 1 else None
        if replica is not None and stack_class.state in (RankState.MOVING, RankState.IDLE):
            key = (stack_class.state.value, replica)
            if key in keyed:
                keyed[key].append(stack_class)
                continue
            keyed[key] = [stack_class]
            groups.append(keyed[key])
        else:
            groups.append([stack_class])
    return groups


def _group_title(
    analysis: Analysis, group: Sequence[StackClass], hung: str | None, moments: int
) -> str:
    ranks = sorted(r for c in group for r in c.ranks)
    names = rank_names(analysis, ranks, hung)
    label = group[0].label if len(group) == 1 and group[0].label else f"[{span(ranks)}]"
    first = group[0]
    where = _where(first)
    state = first.state
    if state is RankState.STUCK:
        seen = f"the same in all {moments} snapshots" if moments > 1 else "seen once"
    elif state is RankState.MOVING:
        seen = "changing between snapshots"
    else:
        seen = state.value
    head = f"**{names}** ({'rank' if len(ranks) == 1 else 'ranks'} {label.strip('[]')})"
    text = f"{head} in {where}, {seen}" if where else f"{head}, {seen}"
    if len(group) > 1:
        # The other classes of the replica: where each was last seen, in one line.
        others = "; ".join(
            f"{rank_names(analysis, c.ranks, hung)} last seen in {_where(c) or c.frames[0].function}"
            for c in group[1:]
        )
        text += f" (stack of {rank_names(analysis, first.ranks, hung)}; {others})"
    return text


def _where(stack_class: StackClass) -> str:
    """Where a class waits in the engine's words: the collective, else (for the analysis's
    own wait kinds, such as a queue read) the innermost function's name; "" when neither."""
    if stack_class.collective:
        return stack_class.collective
    if stack_class.wait and stack_class.frames:
        return stack_class.frames[0].function
    return ""


def plain_dump(snapshots: Sequence[ProcessDump]) -> ProcessDump:
    """The latest dump of a process as a maintainer reads it: a dump without arguments and
    locals (py-spy --locals can hold prompts, paths and keys), the main thread first."""
    plain = [d for d in snapshots if not any(f.locals for t in d.threads for f in t.frames)]
    dump = (plain or list(snapshots))[-1]
    threads = tuple(
        replace(t, frames=tuple(replace(f, locals=()) for f in t.frames)) for t in dump.threads
    )
    main = [t for t in threads if t.name == "MainThread"]
    return replace(dump, threads=(*main, *(t for t in threads if t.name != "MainThread")))


_LIBRARY_TOPS = frozenset(("torch", "triton"))


def library_frame(frame: Frame) -> bool:
    """True for a frame in torch or Python's standard library (not the engine's code)."""
    return _library_path(frame.file)


def _engine_code(
    analysis: Analysis,
    code: Sequence[issueview.CodeView],
    hung: str | None,
    policy: TextPolicy,
) -> tuple[issueview.CodeView, ...]:
    """The code excerpts of the hung instance's classes. An excerpt that is only a link into
    torch or the standard library gives way to the engine's own line in that class's stack
    (its first frame outside them), unless another excerpt already shows that line."""
    excerpts = analysis.excerpts.excerpts if analysis.excerpts else ()
    labels = {c.label: c for c in analysis.classes if hung is None or c.instance == hung}
    shown_lines = [(e.path, e.start, e.end) for e in excerpts if e.lines]
    out: list[issueview.CodeView] = []
    for excerpt, view in zip(excerpts, code, strict=False):
        named = re.match(r"\[([^\]]+)\]", excerpt.title)
        if named and f"[{named.group(1)}]" not in labels:
            continue  # a class of another instance (the healthy one)
        if excerpt.lines or not _library_path(excerpt.path):
            out.append(view)
            continue
        stack_class = labels.get(f"[{named.group(1)}]") if named else None
        frame = next(
            (f for f in (stack_class.frames if stack_class else ()) if not library_frame(f)),
            None,
        )
        if frame is None or frame.line is None:
            continue
        if any(
            path.endswith(frame.short_file) and start <= frame.line <= end
            for path, start, end in shown_lines
        ):
            continue
        out.append(
            issueview.CodeView(
                title=f"{rank_names(analysis, stack_class.ranks, hung) if stack_class else ''} "
                f"{'calls' if stack_class and len(stack_class.ranks) == 1 else 'call'} "
                f"{stack_class.collective or frame.short_function if stack_class else ''} from",
                where=later(md.code, policy.evidence("code excerpt", located(frame, limit=0))),
                block=None,
            )
        )
    return tuple(out)


def _library_path(path: str) -> bool:
    """True for a file of torch, triton or Python's standard library (as py-spy shows it:
    relative to site-packages or the standard library's folder)."""
    parts = path.replace("\\", "/").lstrip("/").split("/")
    if path.startswith("<") or any(p in ("site-packages", "dist-packages") for p in parts):
        return path.startswith("<") or any(p in _LIBRARY_TOPS for p in parts)
    top = parts[0].removesuffix(".py")
    return top in _LIBRARY_TOPS or top in sys.stdlib_module_names


# Timeline kinds the draft leaves out: the dumps are the stacks above, the metric and
# wedge lines are the metrics paragraph.
_TIMELINE_SAID = frozenset(("dump", "dump-failed", "metric", "wedge"))


def _timeline(analysis: Analysis, policy: TextPolicy) -> Block | None:
    """The dated events the rest of the draft does not already say, or None."""
    events = [
        e
        for e in analysis.timeline
        if e.kind.value not in _TIMELINE_SAID and not e.text.startswith("report collect")
    ]
    if not events:
        return None
    lines = [
        f"{e.at:%Y-%m-%d %H:%M:%S} UTC {e.kind.value}: {_per_run(' '.join(e.text.split()))}"
        for e in events[:20]
    ]
    if len(events) > 20:
        lines.append(f"… {len(events) - 20} more")
    return Block(
        key="timeline", title="Timeline (UTC)", text=policy.evidence("timeline", "\n".join(lines))
    )


_PID_RE = re.compile(r"(?i)\b(pid)\s+\d+")
_HOST_PORT_RE = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}:\d{2,5}\b")


def _per_run(text: str) -> str:
    """A timeline line without this run's PIDs and address:port (they tell nothing upstream
    and name this machine)."""
    return _HOST_PORT_RE.sub("<host>:<port>", _PID_RE.sub(r"\1 <pid>", text))


def _tied_changes(analysis: Analysis, hung: str | None) -> bool:
    """True when a change since the last good run names something the hung stacks show
    (a function, file or module in them): only then is it worth a maintainer's look."""
    if analysis.diff is None:
        return False
    words: set[str] = set()
    for stack_class in analysis.classes:
        if hung is not None and stack_class.instance != hung:
            continue
        for frame in stack_class.frames:
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", f"{frame.function} {frame.file}"))
    return any(
        w in words
        for change in analysis.diff.changes
        if not change.noise
        for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", change.key)
    )
