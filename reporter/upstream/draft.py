"""Upstream issue drafts and "+1 with evidence" comments: the form layout and the size budget.

Input: the analyzed bundle, the repository's bug form (or the generic one), the related
issues the duplicate search found, and raw environment-script output read by the
use-case layer. Output: `UpstreamDraft` (title, labels, body, the review document with
front matter, the redaction report, TODO lines, leaks the final scan still flags) and
`UpstreamComment`. Pure: no I/O besides the packaged templates.

The evidence is the report's view of the model (`reporter.render.issueview`, rows shared
with the report through `reporter.render.parts`) under the upstream text policy. How the
body is made safe to post (formats.md 6.6):

* every evidence string is a piece for `redact.redact`, all in one call, so one value
  is one placeholder everywhere: the view is built once with each piece's formatting
  waiting for its redacted text, and settled in one pass after the call;
* evidence sits in code spans and fences made longer than any backtick run inside;
  prose taken from evidence (incident notes, titles of related issues) goes through
  the upstream policy (`reporter.render.policy.INERT`), which puts `@handles`, `#123`,
  `GH-123`, `owner/repo#123`, `user@sha`, issue URLs and bare commit SHAs in code
  spans, where GitHub neither links nor notifies, and escapes the rest;
* related upstream issues are cited as code (`owner/repo#N` and the URL), so posting
  the draft adds no "mentioned this issue" event to their timelines; `link_related`
  turns them into real links when a cross-reference is wanted;
* the body ends with a hidden marker `<!-- reporter:signature=<hash> bundle=<id> -->`
  that filing looks for before creating anything (never file twice);
* the body stays within `REVIEW_BUDGET` characters (a maintainer reads it; GitHub
  refuses more than 65,536): the largest collapsed evidence block is trimmed first, then
  dropped, each time with a note; the bundle keeps everything;
* what maintainers ask for first: the product's version (from the bundle's packages,
  `check_env` or `collect_env` output, or the manifest; else a `TODO(reviewer)` that
  blocks filing), a reproduction from the manifest's `reproduction` (else a TODO; the
  server command line goes to the environment, its program by file name only), per-run
  noise left out of the changes since the last good run (diff.toml's negative rules),
  and a known fix first ("regression of #N, fixed in vX" when the deployment runs vX).

Here: the form layout (one `### <label>` section per field in form order, as GitHub
writes a submitted form, see `reporter.upstream.forms`), the title, the size budget, the
hidden marker and the review document. The evidence section is narrowed to the hung
instance in `focus`, and the reproduction field written in `reproduction`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reporter import __version__
from reporter.analysis import Analysis
from reporter.analysis.environment import ShowRules, default_rules
from reporter.analysis.excerpts import default_upstream_rules
from reporter.core import inert
from reporter.core.text import plural
from reporter.model import Bundle
from reporter.render import frontmatter, issueview
from reporter.render import markdown as md
from reporter.render.issueview import IssueView, RelatedView, SectionView
from reporter.render.lint import GITHUB_BODY_LIMIT, placeholders
from reporter.render.parts import Block
from reporter.render.policy import (
    BARE,
    INERT,
    UPSTREAM,
    Slot,
    Text,
    TextPolicy,
    final,
    github_title,
    later,
    settle,
)
from reporter.upstream import redact as redactor
from reporter.upstream.fixes import deployed_version
from reporter.upstream.focus import focused
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
from reporter.upstream.records import inert_title
from reporter.upstream.reproduction import reproduction
from reporter.upstream.story import Story, build_story

# GitHub's limit is 65,536 characters and does not say whether it counts code points or
# UTF-16 units: stay well below it.
BODY_BUDGET = 60_000
# What a maintainer is asked to read: evidence beyond this is trimmed or left out (the
# bundle keeps it), so a draft stays reviewable.
REVIEW_BUDGET = 14_000
TITLE_LIMIT = 256
# What a maintainer's issue list shows whole: drafted titles stay under 100 characters.
TITLE_MAX_SHOWN = 99
TODO = "TODO(reviewer)"
NO_RESPONSE = "_No response_"
MARKER_PREFIX = "reporter-upstream signature="
# Evidence blocks are never cut below this many lines; below it they are dropped.
MIN_BLOCK_LINES = 12
MAX_RELATED = 5

_MARKER_RE = re.compile(r"<!-- reporter-upstream signature=([0-9a-f]+) bundle=([0-9a-f]+) -->")


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
    known_fix: KnownFix | None = None
    """A likely duplicate fixed in a release, and how the deployment's version stands."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownFix:
    """A likely duplicate upstream fixed in a release: `has_fix` True when the deployment
    already runs that release or later (then this is a regression), False when it runs an
    older one (upgrade first), None when its version is not known."""

    repo: str
    number: int
    url: str
    tag: str
    change: str
    deployed: str
    has_fix: bool | None

    def sentence(self, *, link: bool = True) -> str:
        """ "Regression of #N, fixed in vX" or "matches #N, fixed in vX; upgrade"."""
        ref = f"{self.repo}#{self.number}"
        cited = f"[{ref}]({self.url})" if link else md.code(ref)
        change = f" ({md.code(self.change)})" if self.change else ""
        if self.has_fix:
            return (
                f"**Possible regression of {cited}**, fixed in {md.code(self.tag)}{change}: "
                f"this deployment runs {md.code(self.deployed)}, which has that fix, and hangs "
                "the same way."
            )
        if self.has_fix is False:
            return (
                f"**Known fix: upgrade to {md.code(self.tag)} or later.** This hang matches "
                f"{cited}, fixed in {md.code(self.tag)}{change}; this deployment runs "
                f"{md.code(self.deployed)}. File only if it still hangs after the upgrade."
            )
        runs = f"runs {md.code(self.deployed)}" if self.deployed else "runs a version not known"
        return f"Matches {cited}, fixed in {md.code(self.tag)}{change}; this deployment {runs}."


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


class _Pieces:
    """The upstream policy's evidence hook: each string becomes a numbered piece to redact."""

    def __init__(self) -> None:
        self.pieces: list[redactor.Piece] = []

    def __call__(self, where: str, text: str, key: str = "") -> Text:
        self.pieces.append(redactor.Piece(where=where, text=text, key=key))
        return Slot(len(self.pieces) - 1)


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
        title=INERT(inert_title(record.title)),
        level=level,
        why=INERT(reasons),
    )


def _checklist(fmt: FormField, inputs: DraftInputs, rules: RoleRules) -> str:
    lines: list[str] = []
    open_required = 0
    for option in fmt.options:
        # With a known fix the deployment lacks, the search did help: the box stays open.
        upgrade = inputs.known_fix is not None and inputs.known_fix.has_fix is False
        tick = inputs.searched and not upgrade and bool(rules.tick_searched.search(option.label))
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


def _title(inputs: DraftInputs, story: Story, policy: TextPolicy) -> Text:
    # The component, its mode and what happens, in the engine's words (never the local
    # report's title: it names PIDs, ports and hosts).
    return later(_finish_title, policy.evidence("title", story.title), inputs.form.title)


def _finish_title(text: str, prefix: str) -> str:
    """One line, inert (no control, bidi or zero-width characters; mentions and
    references in code spans), the form's title prefix first, within GitHub's limit."""
    text = github_title(" ".join(inert.for_document(text).split()))
    if prefix.strip() and not text.startswith(prefix.strip()):
        text = prefix + text
    if len(text) > TITLE_LIMIT:
        text = text[: TITLE_LIMIT - 1] + "…"
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Lead:
    """What the draft adds before the evidence: the known fix, the plain first sentence and
    one line per healthy instance (redacted like the evidence)."""

    known_fix: str = ""
    sentence: Text = ""
    reproduction: Text = ""
    """The reproduction, when the form has no field for it (it then follows the sentence)."""
    healthy: tuple[Text, ...] = ()


def _view(inputs: DraftInputs, policy: TextPolicy, mark: str) -> tuple[IssueView, Text, Lead]:
    sections, stacks_here, env_value = _sections(inputs)
    # Under 100 characters with the form's prefix (`[Bug] `).
    prefix = inputs.form.title.strip()
    story = build_story(
        inputs.bundle,
        inputs.analysis,
        inputs.repo,
        title_max=TITLE_MAX_SHOWN - (len(prefix) + 1 if prefix else 0),
    )
    title = _title(inputs, story, policy)
    reproduction_fields = [
        f for f in inputs.form.shown if role_of(f, inputs.role_rules) is Role.REPRODUCTION
    ]
    rendered: list[SectionView] = []
    for section in sections:
        if section.kind == "reproduction":
            fmt = reproduction_fields[0]
            text = reproduction(inputs.bundle, story, policy, fmt) or (
                _todo(
                    fmt,
                    "the launcher's command line is not in the evidence; give the command "
                    "that started the server (or a script that shows the hang)",
                )
                if fmt.required
                else NO_RESPONSE
            )
            rendered.append(replace(section, kind="text", text=text))
        else:
            rendered.append(section)
    evidence = issueview.evidence_view(
        inputs.bundle,
        inputs.analysis,
        policy,
        stacks_here=stacks_here,
        related=tuple(_related(c, inputs.link_related) for c in inputs.related[:MAX_RELATED]),
        link_related=inputs.link_related,
    )
    evidence = focused(inputs.bundle, inputs.analysis, evidence, story, policy)
    # The command line goes in the reproduction field when the form has one.
    environment = issueview.environment_view(
        inputs.bundle,
        inputs.analysis,
        policy,
        scripts=inputs.env_scripts,
        rules=inputs.show_rules or default_rules(),
        field_value=env_value,
        # Said once: the reproduction names the launch line or the wrapper; another
        # instance's command line (the healthy one) never shows.
        show_command=not (story.command or story.wrapper) and story.hung_instance is None,
    )
    todo = _version_todo(inputs)
    if todo:
        # Said once: the TODO says what is missing; no second line about the script.
        environment = replace(environment, version_todo=todo, empty=False, missing_note="")
    elif environment.missing_note:
        environment = replace(
            environment,
            missing_note="What the captured processes show (the environment script the "
            "form asks for was not run):",
        )
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
    ev = policy.evidence
    lead = Lead(
        sentence=later(policy.prose, ev("summary", story.sentence)),
        reproduction=""
        if reproduction_fields
        else reproduction(inputs.bundle, story, policy, None),
        healthy=tuple(later(policy.prose, ev("healthy", line)) for line in story.healthy),
    )
    return view, title, lead


def product_of(repo: str) -> str | None:
    """The distribution a repository ships (`sgl-project/sglang` -> `sglang`), from
    reporter/data/upstream.toml; None for a repository it does not name."""
    for rule in default_upstream_rules():
        if rule.repo.lower() == repo.lower():
            return rule.dist
    return None


# What each product's maintainers ask to be run for the environment field.
_ENV_COMMANDS = {
    "sglang": "python3 -m sglang.check_env",
    "vllm": "python collect_env.py (vLLM's)",
    "torch": "python -m torch.utils.collect_env",
}


def _version_todo(inputs: DraftInputs) -> str:
    """A TODO line when the repository's product is known and its deployed version is not."""
    product = product_of(inputs.repo)
    if product is None:
        return ""
    bundle = inputs.bundle
    installed = {p.name.lower(): p.version for p in bundle.environment.packages if p.version}
    if deployed_version(inputs.repo, installed, bundle.manifest.version, bundle.manifest.service):
        return ""
    run = _ENV_COMMANDS.get(product, f"pip show {product}")
    torch_known = "torch" in installed or "torch" in (bundle.manifest.version or "").lower()
    what = (
        f"the {md.code(product)} version is"
        if torch_known or product == "torch"
        else f"the {md.code(product)} and torch/CUDA versions are"
    )
    return (
        f"_{TODO}: {what} not known (not in the captured package lists); paste the output "
        f"of {md.code(run)} from the server's environment._"
    )


def _render(
    template: str, view: IssueView | issueview.CommentView, lead: Lead | None = None
) -> str:
    """The Markdown of an issue body or a comment: blank-line runs folded, one final newline."""
    # Lazy: name; a function here binds `environment` to something else.
    from reporter.render.render import environment

    text = environment().get_template(template).render(v=view, x=lead or Lead())
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _fit(view: IssueView, budget: int, lead: Lead | None = None) -> tuple[str, IssueView]:
    """Render; while over `budget`, halve the largest evidence block, or drop it, with a note."""
    notes: list[str] = []
    while True:
        body = _render("upstream_issue.md.j2", view, lead)
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
        group, largest = max(blocks, key=lambda item: (len(final(item[1].text)), item[1].key))
        lines = final(largest.text).split("\n")
        # Halving must shrink the block, trim note included; a short block is dropped.
        if len(lines) > 2 * MIN_BLOCK_LINES:
            keep = len(lines) // 2
            cut = len(lines) - keep
            new: Block | None = replace(
                largest,
                text="\n".join(lines[:keep])
                + f"\n… {cut} more lines trimmed (kept in the full capture)",
            )
            note = f"{largest.title}: trimmed to its first {keep} lines"
        else:
            new = None
            note = f"{largest.title}: left out"
        # One note per block, saying where it ended up.
        notes = [n for n in notes if not n.startswith(f"{largest.title}: ")] + [note]
        if group == "variables":
            rows_now = environment.variables
            kept = rows_now[: len(rows_now) // 2] if new is not None else ()
            if kept:
                kept += (("…", f"{len(rows_now) - len(kept)} more not shown"),)
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
    evidence = replace(evidence, trimmed=tuple(BARE(n) for n in notes))
    return replace(view, evidence=evidence, environment=environment)


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


def build_draft(inputs: DraftInputs, *, budget: int = REVIEW_BUDGET) -> UpstreamDraft:
    """The draft: redacted, within `budget` (and always GitHub's limit), with its hidden
    marker; see the module docstring."""
    bundle, analysis = inputs.bundle, inputs.analysis
    ident = bundle_id(bundle)
    mark = marker(analysis.signature.hash, ident)
    pieces = _Pieces()
    built, waiting_title, waiting_lead = _view(inputs, UPSTREAM.with_evidence(pieces), mark)
    # One redaction of every piece, then one pass that makes the view final.
    result = redactor.redact(pieces.pieces, vocabulary=_vocabulary(bundle, analysis))
    view = settle(built, result.texts)
    lead = settle(waiting_lead, result.texts)
    title = final(settle(waiting_title, result.texts))
    footer = (
        f"_Drafted by hangreport {__version__} from what was captured on the server; "
        f"{plural(result.total(), 'value')} (addresses, host and user names, secrets) were "
        "replaced by placeholders such as `<host-1>` before posting._"
        if result.total()
        else f"_Drafted by hangreport {__version__} from what was captured on the server._"
    )
    view = replace(view, evidence=replace(view.evidence, footer=footer))
    if inputs.known_fix is not None:
        # Known fix first: our own sentence (code spans and one deliberate link), not
        # escaped again, before anything else the maintainer reads.
        lead = replace(lead, known_fix=inputs.known_fix.sentence(link=True))
    body, view = _fit(view, min(budget, BODY_BUDGET), lead)
    # What `upstream file` would post, and what the reviewer opens: never a terminal escape,
    # a bidi override or a zero-width character from the evidence.
    body = inert.for_document(body)
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


def build_comment(
    bundle: Bundle, analysis: Analysis, *, issue_text: str, vocabulary: Sequence[str] = ()
) -> UpstreamComment:
    """The "+1 with evidence" comment: version and environment delta against what the
    issue's text says, the signature, the verdict and the minimal stacks; redacted."""
    ident = bundle_id(bundle)
    mark = marker(analysis.signature.hash, ident)
    pieces = _Pieces()
    built = issueview.comment_view(
        bundle,
        analysis,
        UPSTREAM.with_evidence(pieces),
        issue_text=issue_text,
        marker=mark,
        footer=f"_Posted with hangreport {__version__}; addresses, host and user names and "
        "secrets are replaced by placeholders._",
    )
    result = redactor.redact(
        pieces.pieces, vocabulary=[*vocabulary, *_vocabulary(bundle, analysis)]
    )
    body = _render("upstream_comment.md.j2", settle(built, result.texts))
    return UpstreamComment(
        body=body, marker=mark, redaction=result, leaks=redactor.leaks(body, redaction=result)
    )
