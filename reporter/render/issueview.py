"""The upstream issue's view of the evidence: the same model and rows as the report, for GitHub.

Input: a `Bundle`, its `Analysis` and a `TextPolicy` (the upstream one, whose evidence
hook redacts). Output: frozen views the `upstream_*.md.j2` templates lay out: the
"describe the bug" evidence (verdict, classes, branch point, code, metrics, clients,
stacks and collapsed details), the environment field, and the "+1 with evidence"
comment. The form layout (which field gets which part) and the size budget are the
draft's (`reporter.upstream.draft`).

Every evidence string passes through `policy.evidence(where, text, key)` exactly once,
in the order the document shows it, and every formatting of it waits for the redacted
text (`later`): the view is built once, the draft redacts all its pieces in one call,
and `policy.settle` makes the view final in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis import Analysis
from reporter.analysis.diff import ChangeKind, default_rules_diff
from reporter.analysis.environment import ShowRules
from reporter.analysis.result import RankState, StackClass
from reporter.core.text import plural, version_key
from reporter.model import Bundle, Frame, ProcessDump
from reporter.render import markdown as md
from reporter.render import parts
from reporter.render.answer.waits import members
from reporter.render.parts import Block, BranchView, ClassRow, SignalRow, located
from reporter.render.policy import Text, TextPolicy, later
from reporter.render.view import tree_text

MAX_TIMELINE_ENTRIES = 60
MAX_CHANGES = 8
ENVIRONMENT_FIELDS = ("environment", "env", "versions", "hardware", "platform")
DESCRIPTION_FIELDS = ("summary", "description", "symptoms", "symptom", "what_happened", "impact")
CHANGES = "changes since the last good run"

_SUMMARY_OPEN = re.compile(r"<summary>", re.IGNORECASE)
_SUMMARY_CLOSE = re.compile(r"</summary>", re.IGNORECASE)
_ENV_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_MENTION_VERSION_RE = r"(?i)\b{name}\b[\s:=v@-]{{0,4}}v?(\d+\.\d+(?:\.\d+)?(?:[.+\w-]*\w)?)"


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeView:
    title: Text
    where: Text
    block: Block | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RelatedView:
    ref: str
    state: str
    title: str
    level: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceView:
    """The "describe the bug" content: verdict, classes, branch point, stacks, ..."""

    notes: tuple[Text, ...]
    verdict: str
    confidence: str
    basis: str
    summary: Text
    confidence_notes: tuple[Text, ...]
    classes: tuple[ClassRow, ...]
    branch_shared: Text
    branches: tuple[BranchView, ...]
    code: tuple[CodeView, ...]
    wedge: Text
    signals: tuple[SignalRow, ...]
    steps: tuple[Text, ...]
    clients: Text
    related: tuple[RelatedView, ...]
    related_intro: str
    signature_hash: str
    details: tuple[Block, ...]
    stacks: tuple[Block, ...]
    stacks_here: bool
    trimmed: tuple[str, ...]
    footer: str
    flight_recorder: Block | None = None
    """The minimal Flight Recorder excerpt showing the first mismatch (redacted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvironmentView:
    """The environment field: an environment script's output, or what the evidence shows.

    `EnvironmentView(empty=True)`: the evidence shows nothing (the form gets a TODO)."""

    script: Block | None = None
    script_note: str = ""
    python: str = ""
    packages: tuple[tuple[str, Text], ...] = ()
    gpus: tuple[str, ...] = ()
    facts: tuple[tuple[str, Text], ...] = ()
    command: Block | None = None
    variables: tuple[tuple[str, Text], ...] = ()
    variables_summary: str = ""
    missing_note: str = ""
    wrap_summary: str = ""
    notes: tuple[Text, ...] = ()
    empty: bool = False
    version_todo: str = ""
    """A `TODO(reviewer)` line when the product's version is not known (blocks filing)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionView:
    """One `### <label>` section; `kind` says which partial lays it out."""

    label: str
    kind: str
    text: Text = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueView:
    sections: tuple[SectionView, ...]
    evidence: EvidenceView
    environment: EnvironmentView
    marker: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentView:
    verdict: str
    confidence: str
    summary: Text
    signature_hash: str
    signature: Block
    versions: tuple[Text, ...]
    delta: tuple[Text, ...]
    stacks: tuple[Block, ...]
    footer: str
    marker: str


def format_dump(dump: ProcessDump) -> str:
    """A parsed dump written back in py-spy's text layout (one process; locals included)."""
    lines: list[str] = []
    if dump.pid is not None or dump.cmdline:
        lines.append(
            f"Process {dump.pid if dump.pid is not None else '?'}: {dump.cmdline or ''}".rstrip()
        )
    if dump.python_version:
        exe = f" ({dump.python_exe})" if dump.python_exe else ""
        lines.append(f"Python v{dump.python_version}{exe}")
    for thread in dump.threads:
        lines.append("")
        name = f' "{thread.name}"' if thread.name else ""
        lines.append(f"Thread {thread.thread_id} ({thread.status.value}):{name}")
        for frame in thread.frames:
            lines.append(f"    {located(frame, limit=0)}")
            args = [local for local in frame.locals if local.is_arg]
            other = [local for local in frame.locals if not local.is_arg]
            for heading, group in (("Arguments:", args), ("Locals:", other)):
                if group:
                    lines.append(f"        {heading}")
                    lines.extend(f"            {local.name}: {local.repr}" for local in group)
    return "\n".join(lines)


def _stack_text(stack_class: StackClass) -> str:
    """A class's frames innermost first, one `function (file:line)` a line."""
    return "\n".join(located(f, limit=0) for f in stack_class.frames)


def _state_text(stack_class: StackClass, snapshots: int) -> str:
    if stack_class.state is RankState.STUCK:
        return f"stuck in all {snapshots} snapshots" if snapshots > 1 else "seen once"
    if stack_class.state is RankState.MOVING:
        return "moving between snapshots"
    return stack_class.state.value


def _joined(separator: str, *texts: str) -> str:
    return separator.join(texts)


def _code_then(text: str, tail: str) -> str:
    """`text` as code followed by `tail` (a span, a link)."""
    return f"{md.code(text)}{tail}"


def _link(url: str, text: str) -> str:
    return f"[{text}]({url})"


def _source_link(url: str) -> str:
    return f" ([source]({url}))"


def _change_line(kind: str, key: str, before: str, after: str) -> str:
    return f"{kind} {key}: {before} -> {after}"


def _changed(policy: TextPolicy, value: str | None, key: str) -> Text:
    """One side of a change: the value as the policy shows evidence, or `(absent)`."""
    return "(absent)" if value is None else policy.evidence(CHANGES, value, key)


def _prefixed(prefix: str, text: str) -> str:
    return f"{prefix}{md.code(text)}"


def evidence_view(
    bundle: Bundle,
    analysis: Analysis,
    policy: TextPolicy,
    *,
    stacks_here: bool,
    related: tuple[RelatedView, ...],
    link_related: bool,
) -> EvidenceView:
    """The "describe the bug" evidence; see the module docstring."""
    ev = policy.evidence
    notes = tuple(
        later(policy.typed, ev("incident notes", value))
        for key, value in bundle.manifest.fields
        if key.lower() in DESCRIPTION_FIELDS and value.strip()
    )
    n_procs = len(analysis.processes)
    unit = "rank" if analysis.rank_unit == "rank" else "process"
    basis = (
        f"from {plural(analysis.snapshots, 'snapshot')} of "
        f"{plural(n_procs, unit, 'processes' if unit == 'process' else None)}"
    )
    classes = parts.class_rows(analysis, policy, instances=False)
    point = analysis.branch_point
    branch_shared = (
        later(md.code, ev("branch point", point.shared.display())) if point and point.shared else ""
    )
    permalinks = _permalinks(analysis)

    def frame_text(label: str, frame: Frame) -> Text:
        shown = ev(f"branch {label}", frame.display())
        url = permalinks.get((frame.short_file, frame.line)) if frame.line is not None else None
        link = later(_source_link, ev("permalink", url)) if url else ""
        return later(_code_then, shown, link)

    branches = parts.branch_views(point, frame_text)
    code = _code_views(analysis, policy)
    wedge = analysis.wedge
    signals = tuple(
        parts.signal_row(sig) for sig in (wedge.signals if wedge else ()) if sig.shows_wedge
    )
    steps = tuple(
        later(policy.prose, ev("metrics", step.text)) for step in (wedge.steps if wedge else ())
    )
    clients: Text = ""
    if analysis.goroutines:
        clients = later(policy.prose, ev("clients", analysis.clients_sentence))
    if link_related:
        related_intro = "Found by reporter's duplicate search of the upstream issues:"
    else:
        related_intro = (
            "Found by reporter's duplicate search of the upstream issues (cited as code, "
            "not links, so that this issue adds nothing to their timelines):"
        )
    stacks = tuple(
        Block(
            key=f"stack:{c.label}",
            title=f"**{c.label}** in {c.collective or c.wait or 'no collective'}, "
            f"{_state_text(c, analysis.snapshots)}",
            text=ev(f"stack {c.label}", _stack_text(c)),
        )
        for c in analysis.classes
        if c.frames
    )
    details = _details(analysis, policy)
    # The pieces below come last in the redaction order, as they always have: the
    # placeholders are numbered in order of first appearance.
    summary = later(policy.prose, ev("verdict", analysis.summary))
    confidence_notes = tuple(
        later(policy.prose, ev("verdict", n)) for n in analysis.confidence_notes
    )
    wedge_text = later(policy.prose, ev("metrics", wedge.summary)) if wedge else ""
    return EvidenceView(
        notes=notes,
        verdict=analysis.verdict.value,
        confidence=analysis.confidence.value,
        basis=basis,
        summary=summary,
        confidence_notes=confidence_notes,
        classes=classes,
        branch_shared=branch_shared,
        branches=branches,
        code=code,
        wedge=wedge_text,
        signals=signals,
        steps=steps,
        clients=clients,
        related=related,
        related_intro=related_intro,
        signature_hash=analysis.signature.hash,
        details=details,
        stacks=stacks,
        stacks_here=stacks_here,
        trimmed=(),
        footer="",
        flight_recorder=_flight_recorder_block(analysis, policy),
    )


def _code_views(analysis: Analysis, policy: TextPolicy) -> tuple[CodeView, ...]:
    """The code excerpts at the branch point: where (linked when there is a permalink), the
    numbered lines with the branch lines marked `>`."""
    ev = policy.evidence
    code: list[CodeView] = []
    for excerpt in analysis.excerpts.excerpts if analysis.excerpts else ():
        span = (
            f"line {excerpt.start}"
            if excerpt.start == excerpt.end
            else f"lines {excerpt.start}-{excerpt.end}"
        )
        where = later(_code_then, ev("code excerpt", excerpt.path), f" {span}")
        if excerpt.permalink:
            where = later(_link, ev("code excerpt", excerpt.permalink), where)
        block = None
        if excerpt.lines:
            marks = set(excerpt.highlight)
            width = len(str(excerpt.end))
            numbered = "\n".join(
                f"{'>' if n in marks else ' '} {n:>{width}}  {line}"
                for n, line in enumerate(excerpt.lines, start=excerpt.start)
            )
            block = Block(
                key=f"code:{len(code)}",
                title="code",
                text=ev(f"code excerpt {excerpt.path}", numbered),
                info="python" if excerpt.path.endswith(".py") else "text",
            )
        title = later(policy.prose, ev("code excerpt", excerpt.title))
        code.append(CodeView(title=title, where=where, block=block))
    return tuple(code)


def _flight_recorder_block(analysis: Analysis, policy: TextPolicy) -> Block | None:
    """The aligned rows around the first FR mismatch, redacted like every other block."""
    # Lazy: name; a function here binds `excerpt` to something else.
    from reporter.render.frview import excerpt

    text = excerpt(analysis.flight_recorder)
    if not text:
        return None
    return Block(
        key="flight-recorder",
        title="Flight Recorder",
        text=policy.evidence("flight recorder", text),
    )


def _permalinks(analysis: Analysis) -> dict[tuple[str, int], str]:
    """(short file, line) -> permalink, from the code excerpts that have one."""
    out: dict[tuple[str, int], str] = {}
    for excerpt in analysis.excerpts.excerpts if analysis.excerpts else ():
        if not excerpt.permalink:
            continue
        short = "/".join(excerpt.path.split("/")[-2:])
        for line in excerpt.highlight or (excerpt.start,):
            out.setdefault((short, line), excerpt.permalink)
    return out


def _details(analysis: Analysis, policy: TextPolicy) -> tuple[Block, ...]:
    """The larger evidence, each in a collapsed block: tree, one dump per class, timeline, changes."""
    ev = policy.evidence
    blocks: list[Block] = []
    if analysis.tree.children:
        blocks.append(
            Block(
                key="tree",
                title="Merged stack tree of all ranks (outermost frame first)",
                text=ev("merged tree", tree_text(analysis.tree)),
            )
        )
    for stack_class in analysis.classes:
        found = members(analysis, stack_class.instance, stack_class.ranks)
        process = found[0] if found else None
        if process is None or not process.snapshots:
            continue
        with_locals = [
            d for d in process.snapshots if any(f.locals for t in d.threads for f in t.frames)
        ]
        dump = (with_locals or list(process.snapshots))[-1]
        who = (
            f"rank {process.identity.rank}"
            if process.identity.rank is not None
            else f"pid {process.identity.pid}"
        )
        blocks.append(
            Block(
                key=f"dump:{stack_class.label}",
                title=md.summary_text(
                    f"py-spy dump of {who} (class {stack_class.label}) from {dump.source.path}"
                ),
                text=ev(f"dump {dump.source.path}", format_dump(dump)),
            )
        )
    events = analysis.timeline[:MAX_TIMELINE_ENTRIES]
    if events and not all(e.kind.value in ("dump", "dump-failed") for e in events):
        lines = [
            f"{e.at:%Y-%m-%d %H:%M:%S} UTC {e.kind.value}: {' '.join(e.text.split())} ({e.source})"
            for e in events
        ]
        more = len(analysis.timeline) - len(events)
        if more > 0:
            lines.append(f"… {more} more entries in the bundle")
        blocks.append(
            Block(key="timeline", title="Timeline (UTC)", text=ev("timeline", "\n".join(lines)))
        )
    if analysis.diff is not None and analysis.diff.changes:
        # Per-run noise (diff.toml's negative rules: random ports, PIDs, invocation ids,
        # temporary paths, timestamps) stays in the local report, out of the issue.
        kept = [c for c in analysis.diff.changes if not c.noise]
        noise = len(analysis.diff.changes) - len(kept)
        changes = [
            later(
                _change_line,
                c.kind.value,
                ev(CHANGES, c.key),
                _changed(policy, c.before, c.key),
                _changed(policy, c.after, c.key),
            )
            for c in kept[:MAX_CHANGES]
        ]
        if noise:
            changes.append(
                f"({plural(noise, 'per-run change')} left out as noise: ports, process "
                "ids, invocation ids, temporary paths, timestamps; the local report lists them)"
            )
        if kept:
            blocks.append(
                Block(
                    key="changes",
                    title="Changes since the last good run (likeliest culprit first)",
                    text=later(_joined, "\n", *changes),
                )
            )
    return tuple(blocks)


def command_words(analysis: Analysis) -> tuple[str, list[str]] | None:
    """(source, words) of the first server command line the evidence shows, or None.

    A program given by an absolute path is named by its file name: the path is this
    machine's, not something a maintainer can run."""
    summary = analysis.environment
    if not summary or not summary.commands:
        return None
    shown = summary.commands[0]
    program = shown.program
    if program.startswith("/") and not program.startswith(("/usr/", "/bin/")):
        program = program.rsplit("/", 1)[-1]
    words = [program, *shown.positional]
    for flag in shown.flags:
        words.append(flag.name if flag.value is None else f"{flag.name} {flag.value}")
    return shown.source, words


def environment_view(
    bundle: Bundle,
    analysis: Analysis,
    policy: TextPolicy,
    *,
    scripts: Sequence[tuple[str, str]],
    rules: ShowRules,
    field_value: str,
    show_command: bool,
) -> EnvironmentView:
    """The environment field: the first environment script's allowlisted output when the
    bundle has one, else what the evidence shows; `empty` when there is nothing."""
    ev = policy.evidence
    summary = analysis.environment
    script: Block | None = None
    script_note = ""
    if scripts:
        path, text = scripts[0]
        kept, dropped = _allowlisted_script(text, rules)
        script = Block(key="env-script", title=path, text=ev(f"environment script {path}", kept))
        script_note = f"From {md.code(path)}" + (
            f"; {plural(dropped, 'environment variable line')} left out (not allowlisted)."
            if dropped
            else "."
        )
    versions = sorted({d.python_version for d in bundle.dumps if d.python_version}, key=version_key)
    python = ", ".join(versions)
    packages: tuple[tuple[str, Text], ...] = ()
    gpus: tuple[str, ...] = ()
    facts: tuple[tuple[str, Text], ...] = ()
    variables: tuple[tuple[str, Text], ...] = ()
    variables_summary = ""
    command: Block | None = None
    if summary:
        packages = tuple(
            (
                md.code_cell(p.name),
                later(md.code_cell, ev("packages", p.version or p.origin, "version")),
            )
            for p in summary.packages
        )
        gpus = tuple(
            f"GPU {g.index}: {md.cell(g.name)}"
            + (f", {g.memory_total_mib} MiB" if g.memory_total_mib is not None else "")
            for g in summary.gpus
        )
        facts = tuple(
            (md.cell(f.key), later(md.code_cell, ev("environment facts", f.value)))
            for f in summary.facts
        )
        variables = tuple(
            (
                md.code_cell(v.name),
                later(
                    _joined,
                    " · ",
                    *(
                        later(md.code_cell, ev("environment variables", value, v.name))
                        for value in v.values
                    ),
                ),
            )
            for v in sorted(summary.variables, key=lambda v: (-_relevance(v.name), v.name))
        )
        total = len(summary.variables) + summary.hidden
        variables_summary = md.summary_text(
            f"Environment variables: {len(summary.variables)} allowlisted of {total}"
            + (f", {summary.redacted} hidden as secret" if summary.redacted else "")
        )
        found = command_words(analysis)
        if found is not None and show_command:
            source, words = found
            command = Block(
                key="command",
                title=f"Command line ({source})",
                text=ev("command line", " ".join(w for w in words if w)),
                info="shell",
            )
    notes = tuple(
        later(policy.typed, ev("incident notes", value))
        for key, value in bundle.manifest.fields
        if key.lower() in ENVIRONMENT_FIELDS and value.strip()
    )
    if not (script or python or packages or gpus or facts or variables or command or notes):
        return EnvironmentView(empty=True)
    wrap = summary_of(field_value or "")
    return EnvironmentView(
        script=script,
        script_note=script_note,
        python=python,
        packages=packages,
        gpus=gpus,
        facts=facts,
        command=command,
        variables=variables,
        variables_summary=variables_summary,
        missing_note=""
        if script
        else "The environment script the form asks for was not run "
        "for this bundle; this is what the evidence shows.",
        wrap_summary=wrap.strip(),
        notes=notes,
    )


def _relevance(name: str) -> int:
    """How much diff.toml's rules weigh a change of variable `name` (engine knobs 40,
    runtime knobs 30, the rest 0): the table lists the relevant ones first, so trimming
    for size drops the least relevant."""
    rules = default_rules_diff().rules
    return sum(r.weight for r in rules if r.weight > 0 and r.matches(ChangeKind.ENV, name, ()))


def _allowlisted_script(text: str, rules: ShowRules) -> tuple[str, int]:
    """An environment script's output with `NAME=value` lines outside the allowlist removed."""
    kept: list[str] = []
    dropped = 0
    for line in text.splitlines():
        match = _ENV_ASSIGN_RE.fullmatch(line.strip())
        if match:
            name, value = match.group(1), match.group(2)
            if not rules.shows(name, [value]) or rules.secrets.is_secret(name, value):
                dropped += 1
                continue
        kept.append(line)
    return "\n".join(kept).strip("\n"), dropped


def summary_of(text: str) -> str:
    """The text of the first `<summary>...</summary>` in `text` (any case), or "".

    Two literal searches: a `<summary>(.*?)</summary>` search rescans the rest of the text
    from every unclosed `<summary>` (a form field of 360 KB took 52 s).
    """
    opened = _SUMMARY_OPEN.search(text)
    if opened is None:
        return ""
    closed = _SUMMARY_CLOSE.search(text, opened.end())
    return text[opened.end() : closed.start()] if closed is not None else ""


def mentioned_versions(text: str, names: Sequence[str]) -> dict[str, str]:
    """Versions an issue's text gives for `names` (`sglang 0.4.6`, `torch==2.7.0`): first seen."""
    found: dict[str, str] = {}
    for name in names:
        match = re.search(_MENTION_VERSION_RE.format(name=re.escape(name)), text)
        if match:
            found[name] = match.group(1)
    return found


def _version_line(name: str, mine: str, note: str) -> str:
    return f"{md.code(name)} {md.code(mine)}{note}"


def _delta_line(key: str, before: str, after: str, kind: str) -> str:
    return md.code(f"{key}: {before} -> {after}") + f" ({kind}, since the last good run)"


def comment_view(
    bundle: Bundle,
    analysis: Analysis,
    policy: TextPolicy,
    *,
    issue_text: str,
    marker: str,
    footer: str,
) -> CommentView:
    """The "+1 with evidence" comment: version and environment delta against what the
    issue's text says, the signature, the verdict and the minimal stacks."""
    ev = policy.evidence
    packages = analysis.environment.packages if analysis.environment else ()
    theirs = mentioned_versions(issue_text, [p.name for p in packages])
    versions: list[Text] = []
    for package in packages:
        mine = ev("packages", package.version or package.origin, "version")
        other = theirs.get(package.name)
        if other is None:
            note = ""
        elif other == package.version:
            note = " (same as reported here)"
        else:
            note = f" (this issue mentions {md.code(other)})"
        versions.append(later(_version_line, package.name, mine, note))
    manifest = bundle.manifest
    if manifest.version.strip():
        shown = ev("incident notes", manifest.version.strip())
        versions.insert(0, later(_prefixed, "Version (incident notes): ", shown))
    for key, value in manifest.fields:
        if key.lower() in ENVIRONMENT_FIELDS and value.strip():
            noted = later(policy.typed, ev("incident notes", value))
            versions.append(later(_joined, "", "Environment (incident notes): ", noted))
    delta: list[Text] = []
    if analysis.diff is not None:
        for change in analysis.diff.changes[:5]:
            before = _changed(policy, change.before, change.key)
            after = _changed(policy, change.after, change.key)
            name = ev(CHANGES, change.key)
            delta.append(later(_delta_line, name, before, after, change.kind.value))
    stacks = tuple(
        Block(
            key=f"stack:{c.label}",
            title=md.summary_text(f"{c.label} {c.collective or c.wait or 'no collective'}"),
            text=ev(f"stack {c.label}", _stack_text(c)),
        )
        for c in analysis.classes
        if c.frames
    )
    return CommentView(
        verdict=analysis.verdict.value,
        confidence=analysis.confidence.value,
        summary=later(policy.prose, ev("verdict", analysis.summary)),
        signature_hash=analysis.signature.hash,
        signature=Block(
            key="signature", title="signature", text=ev("signature", analysis.signature.text)
        ),
        versions=tuple(versions),
        delta=tuple(delta),
        stacks=stacks,
        footer=footer,
        marker=marker,
    )
