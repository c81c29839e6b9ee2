"""View parts for the evidence around the stacks: runtime environment, changes, code, clients.

Input: the `Analysis` fields `environment`, `diff`, `excerpts` and `goroutines`
(already allowlisted and redacted by the analysis layer). Output: frozen views of
pre-escaped Markdown strings for `report.md.j2`'s sections "Runtime environment",
"Changes since the last good run", "Code at the branch point" and "Clients".
Every value that comes from evidence is put in a code span or a fence, so it can
neither break a table nor ping anyone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reporter.analysis.diff import ChangeKind, EnvDiff
from reporter.analysis.environment import EnvironmentSummary
from reporter.analysis.goroutines import GoBucket, GoroutineAnalysis, minutes_text
from reporter.analysis.result import CodeView as Excerpt
from reporter.analysis.result import ExcerptAnalysis
from reporter.core.text import plural
from reporter.render import markdown as md
from reporter.render.parts import Block

# Changes listed in the report; `report diff --json` has them all.
MAX_CHANGES = 15
# Longest value shown in a table cell; the bundle keeps the whole value.
MAX_VALUE_CHARS = 120
# Buckets whose representative stack is shown, per dump.
MAX_STACKS = 3

_KIND_WORDS = {
    ChangeKind.FLAG: "option",
    ChangeKind.ENV: "env var",
    ChangeKind.PACKAGE: "package",
    ChangeKind.SOURCE: "source",
    ChangeKind.EXCERPT: "excerpt",
    ChangeKind.GPU: "GPU",
    ChangeKind.FACT: "fact",
}


def _short(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_cell(value: str | None) -> str:
    if value is None:
        return "(absent)"
    if value == "":
        return "(empty)"
    return md.code_cell(_short(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandView:
    program: str
    source: str
    flags: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEnvironmentView:
    """The "Runtime environment" section."""

    sources: str
    commands: tuple[CommandView, ...]
    packages: tuple[tuple[str, str, str], ...]
    package_note: str
    gpus: tuple[tuple[str, str, str, str], ...]
    facts: tuple[tuple[str, str], ...]
    variables: tuple[tuple[str, str], ...]
    variables_summary: str


def runtime_environment(summary: EnvironmentSummary | None) -> RuntimeEnvironmentView | None:
    """The runtime environment section, or None without environment evidence."""
    if not summary:
        return None
    assert summary is not None
    commands = tuple(
        CommandView(
            program=md.code(c.program) if c.program else "(none)",
            source=md.code(c.source),
            flags=tuple(
                (md.code_cell(f.name), _value_cell(f.value) if f.value is not None else "(switch)")
                for f in c.flags
            ),
        )
        for c in summary.commands
    )
    packages = tuple(
        (
            md.code_cell(p.name),
            md.code_cell(p.version or p.origin)
            + (f" (also {', '.join(p.others)})" if p.others else ""),
            md.code_cell(p.source),
        )
        for p in summary.packages
    )
    package_note = (
        f"{plural(summary.package_count, 'package')} listed; the key ones are shown."
        if summary.package_count
        else ""
    )
    gpus = tuple(
        (
            str(g.index),
            md.cell(g.name),
            f"{g.memory_used_mib} / {g.memory_total_mib} MiB"
            if g.memory_used_mib is not None and g.memory_total_mib is not None
            else "-",
            f"{g.utilization_pct}%" if g.utilization_pct is not None else "-",
        )
        for g in summary.gpus
    )
    facts = tuple((md.cell(f.key), md.code_cell(_short(f.value))) for f in summary.facts)
    variables = tuple(
        (md.code_cell(v.name), " · ".join(_value_cell(x) for x in v.values))
        for v in summary.variables
    )
    total = len(summary.variables) + summary.hidden
    variables_summary = (
        f"Environment variables: {len(summary.variables)} allowlisted of {total}"
        + (f", {summary.redacted} redacted" if summary.redacted else "")
        + "; the bundle keeps them all"
    )
    return RuntimeEnvironmentView(
        sources=", ".join(md.code(s) for s in summary.sources),
        commands=commands,
        packages=packages,
        package_note=package_note,
        gpus=gpus,
        facts=facts,
        variables=variables,
        variables_summary=md.summary_text(variables_summary),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeRow:
    rank: int
    kind: str
    key: str
    status: str
    before: str
    after: str
    score: int
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangesView:
    """The "Changes since the last good run" section."""

    intro: str
    rows: tuple[ChangeRow, ...]
    more: str
    notes: tuple[str, ...]


def changes(diff: EnvDiff | None) -> ChangesView | None:
    """The diff against the baseline, likeliest culprit first, or None without a baseline."""
    if diff is None:
        return None
    equal = ", ".join(plural(n, _KIND_WORDS[kind]) for kind, n in diff.unchanged if n)
    intro = (
        f"Compared with the baseline (the last good run): {plural(len(diff.changes), 'change')}"
        + (f"; unchanged: {equal}" if equal else "")
        + ". Likeliest culprit first: each score adds the weights listed under why "
        "(`reporter/data/diff.toml`); per-run noise such as process ids, invocation ids, "
        "timestamps, random ports and temporary paths sinks to the bottom."
    )
    rows = tuple(
        ChangeRow(
            rank=rank,
            kind=_KIND_WORDS[c.kind],
            key=md.code_cell(c.key),
            status=c.status.value,
            before=_value_cell(c.before),
            after=_value_cell(c.after),
            score=c.score,
            why=md.cell("; ".join(c.why)),
        )
        for rank, c in enumerate(diff.changes[:MAX_CHANGES], start=1)
    )
    more = (
        f"{len(diff.changes) - MAX_CHANGES} more changes, all scored lower: "
        "`report diff --json` lists them."
        if len(diff.changes) > MAX_CHANGES
        else ""
    )
    return ChangesView(
        intro=intro, rows=rows, more=more, notes=tuple(md.cell(n) for n in diff.notes)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeBlockView:
    title: str
    where: str
    ref_note: str
    status: str
    body: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeSectionView:
    """The "Code at the branch point" section."""

    blocks: tuple[CodeBlockView, ...]
    notes: tuple[str, ...]


def _numbered(excerpt: Excerpt) -> str:
    marks = set(excerpt.highlight)
    width = len(str(excerpt.end))
    return "\n".join(
        f"{'>' if number in marks else ' '} {number:>{width}}  {text}"
        for number, text in enumerate(excerpt.lines, start=excerpt.start)
    )


def code_section(result: ExcerptAnalysis | None) -> CodeSectionView | None:
    """Excerpts with their permalinks, or None when there is nothing to show."""
    if result is None:
        return None
    blocks: list[CodeBlockView] = []
    for excerpt in result.excerpts:
        span = (
            f"line {excerpt.start}"
            if excerpt.start == excerpt.end
            else f"lines {excerpt.start}-{excerpt.end}"
        )
        where = f"{md.code(excerpt.path)} {span}"
        if excerpt.permalink:
            where = f"[{where}]({excerpt.permalink})"
        where += f" ({excerpt.origin}; {md.code(excerpt.cite)})"
        blocks.append(
            CodeBlockView(
                title=excerpt.title,
                where=where,
                ref_note=md.cell(excerpt.ref_note),
                status=md.cell(excerpt.status),
                body=md.fence(_numbered(excerpt)) if excerpt.lines else "",
            )
        )
    return CodeSectionView(blocks=tuple(blocks), notes=tuple(md.cell(n) for n in result.notes))


@dataclass(frozen=True, slots=True, kw_only=True)
class BucketRow:
    count: int
    state: str
    waiting: str
    where: str
    created_by: str
    client: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GoDumpView:
    heading: str
    rows: tuple[BucketRow, ...]
    set_aside: str
    stacks: tuple[Block, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientsView:
    """The "Clients" section: what the Go clients wait for, per dump."""

    headline: str
    dumps: tuple[GoDumpView, ...]


def _clock(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC" if moment is not None else "capture time unknown"


def _bucket_row(bucket: GoBucket) -> BucketRow:
    return BucketRow(
        count=bucket.count,
        state=md.cell(bucket.state or "-"),
        waiting=md.cell(minutes_text(bucket) or "-"),
        where=md.code_cell(bucket.top.function) if bucket.top else "-",
        created_by=md.code_cell(bucket.created_by.function) if bucket.created_by else "-",
        client=md.cell(bucket.client_wait or "-"),
    )


def _stack(bucket: GoBucket) -> Block:
    lines = [f"{f.function}({f.args})\n    {f.file}:{f.line}" for f in bucket.frames]
    if bucket.created_by is not None:
        creator = bucket.created_by
        lines.append(f"created by {creator.function}\n    {creator.file}:{creator.line}")
    return Block(title=md.summary_text(bucket.summary.replace("`", "")), text="\n".join(lines))


def clients(analysis: GoroutineAnalysis | None, headline: str) -> ClientsView | None:
    """The clients section, or None without Go goroutine dumps."""
    if not analysis:
        return None
    assert analysis is not None
    dumps: list[GoDumpView] = []
    for dump in analysis.dumps:
        heading = (
            f"{md.code(str(dump.source))} ({dump.form.value}, {_clock(dump.captured_at)}): "
            f"{plural(dump.total, 'goroutine')} in "
            f"{plural(len(dump.buckets) + len(dump.runtime), 'bucket')}."
        )
        runtime_count = sum(b.count for b in dump.runtime)
        set_aside = (
            f"Set aside: {plural(runtime_count, 'goroutine')} of the Go runtime itself "
            f"({', '.join(sorted({b.state for b in dump.runtime if b.state}))})."
            if dump.runtime
            else ""
        )
        dumps.append(
            GoDumpView(
                heading=heading,
                rows=tuple(_bucket_row(b) for b in dump.buckets),
                set_aside=md.cell(set_aside),
                stacks=tuple(_stack(b) for b in dump.buckets[:MAX_STACKS]),
            )
        )
    return ClientsView(headline=headline, dumps=tuple(dumps))
