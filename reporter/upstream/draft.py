"""Build upstream issue drafts and "+1 with evidence" comments: form-faithful, redacted, inert.

Input: the analyzed bundle, the repository's bug form (or the generic one), the related
issues the duplicate search found, and raw environment-script output read by the
use-case layer. Output: `UpstreamDraft` (title, labels, body, the review document with
front matter, the redaction report, TODO lines, leaks the final scan still flags) and
`UpstreamComment`. Pure: no I/O besides the packaged templates.

How the body is made safe to post (formats.md 6.6):

* every evidence string goes through `redact.redact` first, all in one call, so one
  value is one placeholder everywhere (the view is built twice: once to collect the
  strings, once to lay out their redacted forms, in the same order);
* evidence sits in code spans and fences made longer than any backtick run inside;
  prose taken from evidence (incident notes, titles of related issues) goes through
  `inert`, which puts `@handles`, `#123`, `GH-123`, `owner/repo#123`, `user@sha`,
  issue URLs and bare commit SHAs in code spans, where GitHub neither links nor
  notifies, and escapes the rest;
* related upstream issues are cited as code (`owner/repo#N` and the URL), so posting
  the draft adds no "mentioned this issue" event to their timelines; `link_related`
  turns them into real links when a cross-reference is wanted;
* the body ends with a hidden marker `<!-- reporter:signature=<hash> bundle=<id> -->`
  that filing looks for before creating anything (never file twice);
* the body stays within `BODY_BUDGET` characters (GitHub refuses more than 65,536):
  the largest evidence block is trimmed first, then dropped, each time with a note.

The body follows the form: one `### <label>` section per field in form order, as GitHub
writes a submitted form (see `reporter.upstream.forms`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from reporter import __version__
from reporter.analysis import Analysis
from reporter.analysis.environment import ShowRules, default_rules
from reporter.analysis.result import RankState, StackClass
from reporter.model import Bundle, Frame, ProcessDump, innermost_python
from reporter.render import markdown as md
from reporter.render.lint import GITHUB_BODY_LIMIT, placeholders
from reporter.render.view import BranchView, ClassRow, blocked_in
from reporter.text import number, plural, version_key
from reporter.upstream import redact as redactor
from reporter.upstream.forms import (
    FieldType,
    FormField,
    IssueForm,
    Role,
    RoleRules,
    default_role_rules,
    role_of,
)
from reporter.upstream.rank import Candidate, Level

# GitHub's limit is 65,536 characters and does not say whether it counts code points or
# UTF-16 units: stay well below it.
BODY_BUDGET = 60_000
TITLE_LIMIT = 256
TODO = "TODO(reviewer)"
NO_RESPONSE = "_No response_"
MARKER_PREFIX = "reporter-upstream signature="
# Evidence blocks are never cut below this many lines; below it they are dropped.
MIN_BLOCK_LINES = 12
MAX_TIMELINE_ENTRIES = 60
MAX_CHANGES = 8
MAX_RELATED = 5
REPRODUCTION_FIELDS = ("reproduction", "reproduce", "steps", "steps_to_reproduce", "command")
ENVIRONMENT_FIELDS = ("environment", "env", "versions", "hardware", "platform")
DESCRIPTION_FIELDS = ("summary", "description", "symptoms", "symptom", "what_happened", "impact")

_INERT_RE = re.compile(
    r"`[^`\n]+`"  # code spans already there: kept as they are
    r"|https?://[^\s/]+/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+\S*"  # issue / PR URLs
    r"|(?<![\w.-])[\w.-]+/[\w.-]+(?:#\d+|@[0-9a-fA-F]{7,40})\b"  # owner/repo#1, owner/repo@sha
    r"|(?<![\w`])@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[\w.-]+)?"  # @user, @org/team
    r"|(?<![\w&#])#\d+\b"  # #123
    r"|\bGH-\d+\b"  # GH-123
    r"|(?<![\w@])[\w.-]+@[0-9a-fA-F]{7,40}\b"  # user@sha
    r"|(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"  # bare SHA
    r"|<[a-z][a-z0-9-]*-\d+>"  # redaction placeholders: not HTML tags
)
_PROSE_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
_SUMMARY_RE = re.compile(r"<summary>(.*?)</summary>", re.IGNORECASE | re.DOTALL)
_MARKER_RE = re.compile(r"<!-- reporter-upstream signature=([0-9a-f]+) bundle=([0-9a-f]+) -->")


def inert(text: str) -> str:
    """Prose from evidence, safe on GitHub: references and mentions in code spans, the
    rest escaped, one line. `cc @alice, see #12` -> ``cc `@alice`, see `#12` ``."""
    flat = " ".join(text.split())
    out: list[str] = []
    cursor = 0
    for match in _INERT_RE.finditer(flat):
        out.append(_PROSE_SPECIAL.sub(r"\\\1", flat[cursor : match.start()]))
        found = match.group(0)
        out.append(found if found.startswith("`") else md.code(found))
        cursor = match.end()
    out.append(_PROSE_SPECIAL.sub(r"\\\1", flat[cursor:]))
    return "".join(out)


def marker(signature: str, bundle_id: str) -> str:
    """The hidden line that identifies what a body was made from."""
    return f"<!-- {MARKER_PREFIX}{signature} bundle={bundle_id} -->"


def find_marker(text: str) -> tuple[str, str] | None:
    """(signature, bundle id) of the first marker in `text`, or None."""
    match = _MARKER_RE.search(text or "")
    return (match.group(1), match.group(2)) if match else None


def bundle_id(bundle: Bundle) -> str:
    """A short stable id of a bundle: its title and each evidence file's path, kind, size
    and capture time (content is not read again: files may be gigabytes)."""
    digest = hashlib.sha256(bundle.manifest.title.encode())
    for item in sorted(bundle.files, key=lambda f: f.path):
        stamp = item.captured_at.isoformat() if item.captured_at else ""
        digest.update(f"\0{item.path}\0{item.kind.value}\0{item.size}\0{stamp}".encode())
    return digest.hexdigest()[:12]


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
            where = f"{frame.file}:{frame.line}" if frame.line is not None else frame.file
            lines.append(f"    {frame.function} ({where})")
            args = [local for local in frame.locals if local.is_arg]
            other = [local for local in frame.locals if not local.is_arg]
            for heading, group in (("Arguments:", args), ("Locals:", other)):
                if group:
                    lines.append(f"        {heading}")
                    lines.extend(f"            {local.name}: {local.repr}" for local in group)
    return "\n".join(lines)


def _frame_line(frame: Frame) -> str:
    where = f"{frame.file}:{frame.line}" if frame.line is not None else frame.file
    return f"{frame.function} ({where})"


# --- the view ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A titled evidence block: a `<details>` summary and fenced text (trimmable)."""

    key: str
    title: str
    text: str
    info: str = "text"
    note: str = ""

    @property
    def body(self) -> str:
        """The fenced text."""
        return md.fence(self.text, self.info)


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeView:
    title: str
    where: str
    block: Block | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalView:
    signal: str
    role: str
    before: str
    at_onset: str
    last: str


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

    notes: tuple[str, ...]
    verdict: str
    confidence: str
    basis: str
    summary: str
    confidence_notes: tuple[str, ...]
    classes: tuple[ClassRow, ...]
    branch_shared: str
    branches: tuple[BranchView, ...]
    code: tuple[CodeView, ...]
    wedge: str
    signals: tuple[SignalView, ...]
    steps: tuple[str, ...]
    clients: str
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
    """The environment field: an environment script's output, or what the evidence shows."""

    script: Block | None
    script_note: str
    python: str
    packages: tuple[tuple[str, str], ...]
    gpus: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]
    command: Block | None
    variables: tuple[tuple[str, str], ...]
    variables_summary: str
    missing_note: str
    wrap_summary: str
    notes: tuple[str, ...] = ()
    empty: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionView:
    """One `### <label>` section; `kind` says which partial lays it out."""

    label: str
    kind: str
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueView:
    sections: tuple[SectionView, ...]
    evidence: EvidenceView
    environment: EnvironmentView
    marker: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftInputs:
    """What a draft is made from; the use-case layer gathers it."""

    bundle: Bundle
    analysis: Analysis
    repo: str
    form: IssueForm
    related: tuple[Candidate, ...] = ()
    related_note: str = ""
    searched: bool = False
    """True when the duplicate search ran (then the form's "I searched" box is ticked)."""
    env_scripts: tuple[tuple[str, str], ...] = ()
    """(path, text) of `sglang.check_env` / vLLM `collect_env.py` output in the bundle."""
    link_related: bool = False
    role_rules: RoleRules | None = None
    show_rules: ShowRules | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamDraft:
    """A draft ready for review, and what filing needs to know about it."""

    repo: str
    title: str
    labels: tuple[str, ...]
    body: str
    document: str
    form: str
    signature: str
    bundle_id: str
    marker: str
    redaction: redactor.Redaction = field(repr=False)
    todos: tuple[int, ...]
    leaks: tuple[redactor.Leak, ...]
    trimmed: tuple[str, ...]
    notes: tuple[str, ...]


class _Strings:
    """Collects evidence strings on the first pass, hands out redacted ones on the second."""

    def __init__(self) -> None:
        self.pieces: list[redactor.Piece] = []
        self.redacted: list[str] | None = None
        self.position = 0

    def __call__(self, where: str, text: str, key: str = "") -> str:
        if self.redacted is None:
            self.pieces.append(redactor.Piece(where=where, text=text, key=key))
            return text
        value = self.redacted[self.position]
        self.position += 1
        return value


class _S(Protocol):
    """Hands a string to redaction: `s(where, text, key)` (key: the name it is the value of)."""

    def __call__(self, where: str, text: str, key: str = "") -> str: ...


def _state_text(stack_class: StackClass, snapshots: int) -> str:
    if stack_class.state is RankState.STUCK:
        return f"stuck in all {snapshots} snapshots" if snapshots > 1 else "seen once"
    if stack_class.state is RankState.MOVING:
        return "moving between snapshots"
    return stack_class.state.value


def _evidence(inputs: DraftInputs, s: _S, *, stacks_here: bool) -> EvidenceView:
    bundle, analysis = inputs.bundle, inputs.analysis
    notes = tuple(
        inert(s("incident notes", value))
        for key, value in bundle.manifest.fields
        if key.lower() in DESCRIPTION_FIELDS and value.strip()
    )
    n_procs = len(analysis.processes)
    unit = "rank" if analysis.rank_unit == "rank" else "process"
    basis = (
        f"from {plural(analysis.snapshots, 'snapshot')} of "
        f"{plural(n_procs, unit, 'processes' if unit == 'process' else None)}"
    )
    classes = tuple(
        ClassRow(
            label=c.label,
            count=len(c.ranks),
            state=c.state.value,
            blocked_in=blocked_in(c),
            top_frame=md.code_cell(s(f"class {c.label}", top.display()))
            if (top := innermost_python(c.frames)) is not None
            else "-",
        )
        for c in analysis.classes
    )
    point = analysis.branch_point
    branch_shared = (
        md.code(s("branch point", point.shared.display())) if point and point.shared else ""
    )
    permalinks = _permalinks(analysis)
    branches = tuple(
        BranchView(
            label=b.label,
            collective=b.collective or "no collective",
            frames=tuple(
                md.code(s(f"branch {b.label}", f.display())) + _link(permalinks, f, s)
                for f in b.frames
            ),
        )
        for b in (point.branches if point else ())
    )
    code: list[CodeView] = []
    for excerpt in analysis.excerpts.excerpts if analysis.excerpts else ():
        span = (
            f"line {excerpt.start}"
            if excerpt.start == excerpt.end
            else f"lines {excerpt.start}-{excerpt.end}"
        )
        where = f"{md.code(s('code excerpt', excerpt.path))} {span}"
        if excerpt.permalink:
            where = f"[{where}]({s('code excerpt', excerpt.permalink)})"
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
                text=s(f"code excerpt {excerpt.path}", numbered),
                info="python" if excerpt.path.endswith(".py") else "text",
            )
        code.append(
            CodeView(title=inert(s("code excerpt", excerpt.title)), where=where, block=block)
        )
    wedge = analysis.wedge
    signals = tuple(
        SignalView(
            signal=md.code_cell(sig.name),
            role=sig.role.value + (" (rate)" if sig.rate else ""),
            before=_number(sig.before),
            at_onset=_number(sig.at_onset),
            last=_number(sig.last),
        )
        for sig in (wedge.signals if wedge else ())
        if sig.shows_wedge
    )
    steps = tuple(inert(s("metrics", step.text)) for step in (wedge.steps if wedge else ()))
    clients = inert(s("clients", analysis.clients_sentence)) if analysis.goroutines else ""
    related = tuple(_related(c, inputs.link_related) for c in inputs.related[:MAX_RELATED])
    if inputs.link_related:
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
            text=s(f"stack {c.label}", "\n".join(_frame_line(f) for f in c.frames)),
        )
        for c in analysis.classes
        if c.frames
    )
    details = list(_details(inputs, s))
    return EvidenceView(
        notes=notes,
        verdict=analysis.verdict.value,
        confidence=analysis.confidence.value,
        basis=basis,
        summary=inert(s("verdict", analysis.summary)),
        confidence_notes=tuple(inert(s("verdict", n)) for n in analysis.confidence_notes),
        classes=classes,
        branch_shared=branch_shared,
        branches=branches,
        code=tuple(code),
        wedge=inert(s("metrics", wedge.summary)) if wedge else "",
        signals=signals,
        steps=steps,
        clients=clients,
        related=related,
        related_intro=related_intro,
        signature_hash=analysis.signature.hash,
        details=tuple(details),
        stacks=stacks,
        stacks_here=stacks_here,
        trimmed=(),
        footer="",
        flight_recorder=_flight_recorder_block(analysis, s),
    )


def _flight_recorder_block(analysis: Analysis, s: _S) -> Block | None:
    """The aligned rows around the first FR mismatch, redacted like every other block."""
    from reporter.render.frview import excerpt

    text = excerpt(analysis.flight_recorder)
    if not text:
        return None
    return Block(key="flight-recorder", title="Flight Recorder", text=s("flight recorder", text))


def _number(value: float | None) -> str:
    return "-" if value is None else number(value)


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


def _link(permalinks: dict[tuple[str, int], str], frame: Frame, s: _S) -> str:
    if frame.line is None:
        return ""
    url = permalinks.get((frame.short_file, frame.line))
    return f" ([source]({s('permalink', url)}))" if url else ""


def _related(candidate: Candidate, link: bool) -> RelatedView:
    record = candidate.issue.record
    ref = f"{record.repo}#{record.number}"
    reasons = "; ".join(candidate.reasons.notes[:2])
    level = "likely duplicate" if candidate.level is Level.LIKELY_DUPLICATE else "related"
    state = record.state
    if record.state == "closed" and record.state_reason:
        state = f"closed as {record.state_reason.replace('_', ' ')}"
    return RelatedView(
        ref=f"[{md.code(ref)}]({record.html_url})"
        if link
        else f"{md.code(ref)} ({md.code(record.html_url)})",
        state=state,
        title=inert(record.title),
        level=level,
        why=inert(reasons),
    )


def _details(inputs: DraftInputs, s: _S) -> list[Block]:
    """The larger evidence, each in a collapsed block: tree, one dump per class, timeline, changes."""
    from reporter.render.view import tree_text

    analysis = inputs.analysis
    blocks: list[Block] = []
    if analysis.tree.children:
        blocks.append(
            Block(
                key="tree",
                title="Merged stack tree of all ranks (outermost frame first)",
                text=s("merged tree", tree_text(analysis.tree)),
            )
        )
    by_pid = {p.identity.pid: p for p in analysis.processes}
    for stack_class in analysis.classes:
        process = by_pid.get(stack_class.pids[0]) if stack_class.pids else None
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
                text=s(f"dump {dump.source.path}", format_dump(dump)),
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
            Block(key="timeline", title="Timeline (UTC)", text=s("timeline", "\n".join(lines)))
        )
    if analysis.diff is not None and analysis.diff.changes:
        where = "changes since the last good run"
        lines = [
            f"{c.kind.value} {s(where, c.key)}: "
            f"{s(where, c.before, c.key) if c.before is not None else '(absent)'} -> "
            f"{s(where, c.after, c.key) if c.after is not None else '(absent)'}"
            for c in analysis.diff.changes[:MAX_CHANGES]
        ]
        blocks.append(
            Block(
                key="changes",
                title="Changes since the last good run (likeliest culprit first)",
                text="\n".join(lines),
            )
        )
    return blocks


def _environment(
    inputs: DraftInputs, s: _S, field_value: str, *, show_command: bool
) -> EnvironmentView:
    rules = inputs.show_rules or default_rules()
    summary = inputs.analysis.environment
    script: Block | None = None
    script_note = ""
    if inputs.env_scripts:
        path, text = inputs.env_scripts[0]
        kept, dropped = _allowlisted_script(text, rules)
        script = Block(key="env-script", title=path, text=s(f"environment script {path}", kept))
        script_note = f"From {md.code(path)}" + (
            f"; {plural(dropped, 'environment variable line')} left out (not allowlisted)."
            if dropped
            else "."
        )
    versions = sorted(
        {d.python_version for d in inputs.bundle.dumps if d.python_version},
        key=version_key,
    )
    python = ", ".join(versions)
    packages: tuple[tuple[str, str], ...] = ()
    gpus: tuple[str, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    variables: tuple[tuple[str, str], ...] = ()
    variables_summary = ""
    command: Block | None = None
    if summary:
        packages = tuple(
            (md.code_cell(p.name), md.code_cell(s("packages", p.version or p.origin, "version")))
            for p in summary.packages
        )
        gpus = tuple(
            f"GPU {g.index}: {md.cell(g.name)}"
            + (f", {g.memory_total_mib} MiB" if g.memory_total_mib is not None else "")
            for g in summary.gpus
        )
        facts = tuple(
            (md.cell(f.key), md.code_cell(s("environment facts", f.value))) for f in summary.facts
        )
        variables = tuple(
            (
                md.code_cell(v.name),
                " · ".join(
                    md.code_cell(s("environment variables", value, v.name)) for value in v.values
                ),
            )
            for v in summary.variables
        )
        total = len(summary.variables) + summary.hidden
        variables_summary = md.summary_text(
            f"Environment variables: {len(summary.variables)} allowlisted of {total}"
            + (f", {summary.redacted} hidden as secret" if summary.redacted else "")
        )
        if summary.commands and show_command:
            shown = summary.commands[0]
            words = [shown.program, *shown.positional]
            for name, value in shown.flags:
                words.append(name if value is None else f"{name} {value}")
            command = Block(
                key="command",
                title=f"Command line ({shown.source})",
                text=s("command line", " ".join(w for w in words if w)),
                info="shell",
            )
    notes = tuple(
        inert(s("incident notes", value))
        for key, value in inputs.bundle.manifest.fields
        if key.lower() in ENVIRONMENT_FIELDS and value.strip()
    )
    missing = not (script or python or packages or gpus or facts or variables or command or notes)
    if missing:
        return EnvironmentView(
            script=None,
            script_note="",
            python="",
            packages=(),
            gpus=(),
            facts=(),
            command=None,
            variables=(),
            variables_summary="",
            missing_note="",
            wrap_summary="",
            empty=True,
        )
    wrap = _SUMMARY_RE.search(field_value or "")
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
        wrap_summary=wrap.group(1).strip() if wrap else "",
        notes=notes,
    )


_ENV_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")


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


def _reproduction(inputs: DraftInputs, s: _S, fmt: FormField) -> str:
    """The reproduction field: the incident notes' reproduction, then the command line."""
    parts: list[tuple[str, str]] = []
    for key, text in inputs.bundle.manifest.fields:
        if key.lower() in REPRODUCTION_FIELDS and text.strip():
            parts.append(
                ("Reproduction (from the incident notes)", s("reproduction", text.strip()))
            )
    summary = inputs.analysis.environment
    if summary and summary.commands:
        shown = summary.commands[0]
        words = [shown.program, *shown.positional]
        for name, value in shown.flags:
            words.append(name if value is None else f"{name} {value}")
        parts.append(
            (
                f"Server command line seen in the evidence ({shown.source})",
                s("command line", " ".join(words)),
            )
        )
    if not parts:
        return ""
    if fmt.render:
        # GitHub fences a `render:` field itself: the text goes in as plain lines.
        lines: list[str] = []
        for title, text in parts:
            lines.append(f"# {title}")
            lines.append(text)
        return md.fence("\n".join(lines), fmt.render)
    return "\n\n".join(f"{title}:\n\n{md.fence(text, 'shell')}" for title, text in parts)


def _checklist(fmt: FormField, inputs: DraftInputs, rules: RoleRules) -> str:
    lines: list[str] = []
    open_required = 0
    for option in fmt.options:
        tick = inputs.searched and bool(rules.tick_searched.search(option.label))
        if option.required and not tick:
            open_required += 1
        lines.append(f"- [{'X' if tick else ' '}] {option.label}")
    if open_required:
        lines.append("")
        lines.append(
            f"_{TODO}: tick the {plural(open_required, 'required box', 'required boxes')} above "
            "once true (the form requires them), then delete this line._"
        )
    return "\n".join(lines)


def _todo(fmt: FormField, what: str) -> str:
    return f"_{TODO}: {what} (required by the form's {md.code(fmt.label)} field)._"


def _sections(inputs: DraftInputs) -> tuple[tuple[SectionView, ...], bool, str]:
    """(sections, whether the stacks go in the description, the environment field's value)."""
    form = inputs.form
    rules = inputs.role_rules or default_role_rules()
    roles = [(f, role_of(f, rules)) for f in form.shown]
    has_logs = any(r is Role.LOGS for _, r in roles)
    has_description = any(r is Role.DESCRIPTION for _, r in roles)
    env_value = next((f.value for f, r in roles if r is Role.ENVIRONMENT), "")
    out: list[SectionView] = []
    evidence_placed = False
    for fmt, role in roles:
        label = fmt.label
        if role is Role.CHECKLIST:
            out.append(SectionView(label=label, kind="text", text=_checklist(fmt, inputs, rules)))
        elif role is Role.DESCRIPTION and not evidence_placed:
            out.append(SectionView(label=label, kind="evidence"))
            evidence_placed = True
        elif role is Role.ENVIRONMENT:
            out.append(SectionView(label=label, kind="environment"))
        elif role is Role.REPRODUCTION:
            out.append(SectionView(label=label, kind="reproduction"))
        elif role is Role.LOGS and has_description:
            out.append(SectionView(label=label, kind="stacks"))
        elif fmt.type is FieldType.DROPDOWN and fmt.required:
            choices = ", ".join(md.code(o.label) for o in fmt.options)
            out.append(
                SectionView(label=label, kind="text", text=_todo(fmt, f"choose one of {choices}"))
            )
        elif fmt.required:
            out.append(SectionView(label=label, kind="text", text=_todo(fmt, "fill this in")))
        else:
            out.append(SectionView(label=label, kind="text", text=NO_RESPONSE))
    if not evidence_placed:
        # A form with no description field: the evidence goes after the last section.
        out.append(SectionView(label="Evidence", kind="evidence"))
    return tuple(out), not has_logs or not has_description, env_value


def _title(inputs: DraftInputs, s: _S) -> str:
    from reporter.render.answer import build as build_answer

    # The local report's title: who waits for whom, or what the metrics show.
    base = inputs.bundle.manifest.title or build_answer(inputs.bundle, inputs.analysis).title
    text = " ".join(s("title", base).split())
    prefix = inputs.form.title
    if prefix.strip() and not text.startswith(prefix.strip()):
        text = prefix + text
    if len(text) > TITLE_LIMIT:
        text = text[: TITLE_LIMIT - 1] + "…"
    return text


def _view(inputs: DraftInputs, s: _S, mark: str) -> tuple[IssueView, str]:
    sections, stacks_here, env_value = _sections(inputs)
    title = _title(inputs, s)
    reproduction_fields = [
        f for f in inputs.form.shown if role_of(f, inputs.role_rules) is Role.REPRODUCTION
    ]
    rendered: list[SectionView] = []
    for section in sections:
        if section.kind == "reproduction":
            fmt = reproduction_fields[0]
            text = _reproduction(inputs, s, fmt) or (
                _todo(fmt, "give the command or script that shows the hang")
                if fmt.required
                else NO_RESPONSE
            )
            rendered.append(replace(section, kind="text", text=text))
        else:
            rendered.append(section)
    evidence = _evidence(inputs, s, stacks_here=stacks_here)
    # The command line goes in the reproduction field when the form has one.
    environment = _environment(inputs, s, env_value, show_command=not reproduction_fields)
    if environment.empty:
        env_fields = [
            f for f in inputs.form.shown if role_of(f, inputs.role_rules) is Role.ENVIRONMENT
        ]
        rendered = [
            replace(
                section,
                kind="text",
                text=_todo(env_fields[0], "paste the environment script's output")
                if env_fields and env_fields[0].required
                else NO_RESPONSE,
            )
            if section.kind == "environment"
            else section
            for section in rendered
        ]
    view = IssueView(
        sections=tuple(rendered), evidence=evidence, environment=environment, marker=mark
    )
    return view, title


def _render(view: IssueView) -> str:
    from reporter.render.render import environment

    text = environment().get_template("upstream_issue.md.j2").render(v=view)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _fit(view: IssueView, budget: int) -> tuple[str, IssueView]:
    """Render; while over `budget`, halve the largest evidence block, or drop it, with a note."""
    notes: list[str] = []
    while True:
        body = _render(view)
        if len(body) <= budget:
            return body, view
        evidence, environment = view.evidence, view.environment
        # Collapsed evidence goes first; the minimal stacks and code only when nothing else is left.
        blocks: list[tuple[str, Block]] = [("details", b) for b in evidence.details]
        if environment.script is not None:
            blocks.append(("script", environment.script))
        if environment.variables:
            rows = "\n".join(f"{name} {value}" for name, value in environment.variables)
            blocks.append(
                (
                    "variables",
                    Block(key="variables", title="Environment variables table", text=rows),
                )
            )
        if not blocks:
            blocks = [("stacks", b) for b in evidence.stacks]
            blocks += [("code", c.block) for c in evidence.code if c.block is not None]
        if not blocks:
            return body, view  # nothing left to trim; the caller reports the size
        group, largest = max(blocks, key=lambda item: (len(item[1].text), item[1].key))
        lines = largest.text.split("\n")
        # Halving must shrink the block, trim note included; a short block is dropped.
        if len(lines) > 2 * MIN_BLOCK_LINES:
            keep = len(lines) // 2
            cut = len(lines) - keep
            new: Block | None = replace(
                largest,
                text="\n".join(lines[:keep])
                + f"\n… {cut} more lines trimmed to fit GitHub's size limit",
            )
            note = f"{largest.title}: trimmed to its first {keep} lines"
        else:
            new = None
            note = f"{largest.title}: left out"
        if note not in notes:
            notes.append(note)
        if group == "variables":
            rows_now = environment.variables
            kept = rows_now[: len(rows_now) // 2] if new is not None else ()
            if kept:
                kept += (
                    ("…", f"{len(rows_now) - len(kept)} more trimmed to fit GitHub's size limit"),
                )
            view = replace(view, environment=replace(environment, variables=kept))
            view = _replace_block(view, "none", largest, None, tuple(notes))
            continue
        view = _replace_block(view, group, largest, new, tuple(notes))


def _replace_block(
    view: IssueView, group: str, old: Block, new: Block | None, notes: tuple[str, ...]
) -> IssueView:
    evidence = view.evidence
    environment = view.environment

    def swap(blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        return tuple(b for b in (new if b is old else b for b in blocks) if b is not None)

    if group == "details":
        evidence = replace(evidence, details=swap(evidence.details))
    elif group == "stacks":
        evidence = replace(evidence, stacks=swap(evidence.stacks))
    elif group == "none":
        pass
    elif group == "code":
        evidence = replace(
            evidence,
            code=tuple(replace(c, block=new) if c.block is old else c for c in evidence.code),
        )
    else:
        environment = replace(environment, script=new)
    evidence = replace(evidence, trimmed=tuple(_prose_escape(n) for n in notes))
    return replace(view, evidence=evidence, environment=environment)


def _prose_escape(text: str) -> str:
    return _PROSE_SPECIAL.sub(r"\\\1", text)


def _vocabulary(bundle: Bundle, analysis: Analysis) -> set[str]:
    """Words of the evidence's own code: a learnt name equal to one is never hunted for."""
    words: set[str] = set()
    for stack_class in analysis.classes:
        for frame in stack_class.frames:
            words.update(
                re.findall(r"[A-Za-z][A-Za-z0-9_]+", f"{frame.function} {frame.short_file}")
            )
    for package in bundle.environment.packages:
        words.add(package.name)
        words.update(package.name.replace("-", "_").split("_"))
    return words


def build_draft(inputs: DraftInputs, *, budget: int = BODY_BUDGET) -> UpstreamDraft:
    """The draft: redacted, within `budget`, with its hidden marker; see the module docstring."""
    bundle, analysis = inputs.bundle, inputs.analysis
    ident = bundle_id(bundle)
    mark = marker(analysis.signature.hash, ident)
    strings = _Strings()
    _view(inputs, strings, mark)
    result = redactor.redact(strings.pieces, vocabulary=_vocabulary(bundle, analysis))
    strings.redacted = list(result.texts)
    view, title = _view(inputs, strings, mark)
    if strings.position != len(result.texts):
        raise AssertionError("draft view asked for different strings on its second pass")
    footer = (
        f"_Drafted by reporter {__version__} from an evidence bundle; "
        f"{plural(result.total(), 'value')} (addresses, host and user names, secrets) were "
        "replaced by placeholders such as `<host-1>` before posting._"
        if result.total()
        else f"_Drafted by reporter {__version__} from an evidence bundle._"
    )
    view = replace(view, evidence=replace(view.evidence, footer=footer))
    body, view = _fit(view, budget)
    notes: list[str] = []
    if len(body) > GITHUB_BODY_LIMIT:
        notes.append(
            f"the body is {len(body):,} characters even with all evidence blocks trimmed; "
            f"GitHub accepts at most {GITHUB_BODY_LIMIT:,}"
        )
    if inputs.related_note:
        notes.append(inputs.related_note)
    found = redactor.leaks(f"{title}\n{body}", redaction=result)
    labels = inputs.form.labels
    document = _document(inputs, title=title, labels=labels, body=body, ident=ident, result=result)
    return UpstreamDraft(
        repo=inputs.repo,
        title=title,
        labels=labels,
        body=body,
        document=document,
        form=inputs.form.source,
        signature=analysis.signature.hash,
        bundle_id=ident,
        marker=mark,
        redaction=result,
        todos=placeholders(body),
        leaks=found,
        trimmed=view.evidence.trimmed,
        notes=tuple(notes),
    )


def _document(
    inputs: DraftInputs,
    *,
    title: str,
    labels: Sequence[str],
    body: str,
    ident: str,
    result: redactor.Redaction,
) -> str:
    """Front matter (for the reviewer; not sent) followed by the body (sent as it is)."""

    def q(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = [
        "---",
        "kind: upstream-draft",
        "status: draft",
        f"repo: {q(inputs.repo)}",
        f"title: {q(title)}",
        f"labels: {q(list(labels))}",
        f"form: {q(inputs.form.source)}",
        f"signature: {q(inputs.analysis.signature.hash)}",
        f"bundle_id: {q(ident)}",
        "upstream_issue: null",
        "# What was replaced before posting (kind in where: count); the values are not here.",
        "redactions:",
    ]
    entries = redactor.report_lines(result.report)
    lines.extend(f"  - {q(entry)}" for entry in entries)
    if not entries:
        lines[-1] = "redactions: []"
    lines.append("---")
    return "\n".join(lines) + "\n" + body


def split_document(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a draft document as `report upstream draft` wrote it."""
    from reporter.render import frontmatter

    front = frontmatter.parse(text)
    _block, body, _start = frontmatter.split(text)
    data = dict(front.data) if front is not None and front.data is not None else {}
    return data, body


# --- "+1 with evidence" ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamComment:
    """A comment for an existing issue: what this bundle adds to it."""

    body: str
    marker: str
    redaction: redactor.Redaction = field(repr=False)
    leaks: tuple[redactor.Leak, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentView:
    verdict: str
    confidence: str
    summary: str
    signature_hash: str
    signature: Block
    versions: tuple[str, ...]
    delta: tuple[str, ...]
    stacks: tuple[Block, ...]
    footer: str
    marker: str


_MENTION_VERSION_RE = r"(?i)\b{name}\b[\s:=v@-]{{0,4}}v?(\d+\.\d+(?:\.\d+)?(?:[.+\w-]*\w)?)"


def mentioned_versions(text: str, names: Sequence[str]) -> dict[str, str]:
    """Versions an issue's text gives for `names` (`sglang 0.4.6`, `torch==2.7.0`): first seen."""
    found: dict[str, str] = {}
    for name in names:
        match = re.search(_MENTION_VERSION_RE.format(name=re.escape(name)), text)
        if match:
            found[name] = match.group(1)
    return found


def build_comment(
    bundle: Bundle, analysis: Analysis, *, issue_text: str, vocabulary: Sequence[str] = ()
) -> UpstreamComment:
    """The "+1 with evidence" comment: version and environment delta against what the
    issue's text says, the signature, the verdict and the minimal stacks; redacted."""
    ident = bundle_id(bundle)
    mark = marker(analysis.signature.hash, ident)
    strings = _Strings()

    def view(s: _S) -> CommentView:
        packages = analysis.environment.packages if analysis.environment else ()
        theirs = mentioned_versions(issue_text, [p.name for p in packages])
        versions: list[str] = []
        for package in packages:
            mine = s("packages", package.version or package.origin, "version")
            other = theirs.get(package.name)
            if other is None:
                versions.append(f"{md.code(package.name)} {md.code(mine)}")
            elif other == package.version:
                versions.append(f"{md.code(package.name)} {md.code(mine)} (same as reported here)")
            else:
                versions.append(
                    f"{md.code(package.name)} {md.code(mine)} (this issue mentions {md.code(other)})"
                )
        manifest = bundle.manifest
        if manifest.version.strip():
            versions.insert(
                0,
                f"Version (incident notes): {md.code(s('incident notes', manifest.version.strip()))}",
            )
        for key, value in manifest.fields:
            if key.lower() in ENVIRONMENT_FIELDS and value.strip():
                versions.append(
                    f"Environment (incident notes): {inert(s('incident notes', value))}"
                )
        delta: list[str] = []
        if analysis.diff is not None:
            for change in analysis.diff.changes[:5]:
                where = "changes since the last good run"
                before = (
                    s(where, change.before, change.key) if change.before is not None else "(absent)"
                )
                after = (
                    s(where, change.after, change.key) if change.after is not None else "(absent)"
                )
                delta.append(
                    md.code(f"{s(where, change.key)}: {before} -> {after}")
                    + f" ({change.kind.value}, since the last good run)"
                )
        stacks = tuple(
            Block(
                key=f"stack:{c.label}",
                title=md.summary_text(f"{c.label} {c.collective or c.wait or 'no collective'}"),
                text=s(f"stack {c.label}", "\n".join(_frame_line(f) for f in c.frames)),
            )
            for c in analysis.classes
            if c.frames
        )
        return CommentView(
            verdict=analysis.verdict.value,
            confidence=analysis.confidence.value,
            summary=inert(s("verdict", analysis.summary)),
            signature_hash=analysis.signature.hash,
            signature=Block(
                key="signature", title="signature", text=s("signature", analysis.signature.text)
            ),
            versions=tuple(versions),
            delta=tuple(delta),
            stacks=stacks,
            footer=f"_Posted with reporter {__version__}; addresses, host and user names and secrets are replaced by placeholders._",
            marker=mark,
        )

    view(strings)
    result = redactor.redact(
        strings.pieces, vocabulary=[*vocabulary, *_vocabulary(bundle, analysis)]
    )
    strings.redacted = list(result.texts)
    final = view(strings)
    from reporter.render.render import environment

    text = environment().get_template("upstream_comment.md.j2").render(v=final)
    body = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    return UpstreamComment(
        body=body, marker=mark, redaction=result, leaks=redactor.leaks(body, redaction=result)
    )
