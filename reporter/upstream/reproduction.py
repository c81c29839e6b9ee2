"""A draft's reproduction field, from the evidence.

The engine's launch line (secrets and this machine's paths masked) and the facts around
it (model, mode, parallel sizes, last event before the hang); or, when the evidence holds
only a wrapper or test script, that the launch line was not captured, the options the
wrapper passed, and what would capture it (`LAUNCH_CAPTURE`). The incident notes'
reproduction is used only when it is the launch line or steps in words.
"""

from __future__ import annotations

import re

from reporter.model import Bundle
from reporter.render import markdown as md
from reporter.render.policy import INERT, Text, TextPolicy, later
from reporter.upstream.forms import FormField
from reporter.upstream.story import Story

REPRODUCTION_FIELDS = ("reproduction", "reproduce", "steps", "steps_to_reproduce", "command")


_LAUNCH_TEXT_RE = re.compile(
    r"(?:-m\s+|\b)(?:sglang\.launch_server|vllm\s+serve|vllm\.entrypoints\.\S+|torchrun)\b"
)
_SCRIPT_LINE_RE = re.compile(r"^\s*(?:\S*python[\d.]*\s+)?\S+\.(?:py|sh)\b[^\n]*$")
# What a reviewer runs on the server host to give the launch line that was not captured.
LAUNCH_CAPTURE = (
    "the command line of the process that starts the engine (`tr '\\0' ' ' < "
    "/proc/<pid>/cmdline` on the server host), or the service's start command"
)


def _harness_only(text: str) -> bool:
    """True when the incident notes' reproduction is one command of a test or wrapper
    script (`python tests/capture.py case --snapshots 3`), not the engine's launch line
    or steps in words."""
    lines = [line for line in text.splitlines() if line.strip()]
    return (
        len(lines) == 1
        and _SCRIPT_LINE_RE.match(lines[0]) is not None
        and not _LAUNCH_TEXT_RE.search(lines[0])
    )


def reproduction(bundle: Bundle, story: Story, policy: TextPolicy, fmt: FormField | None) -> Text:
    """The reproduction field from the evidence: the engine's launch line (secrets and
    this machine's paths masked), the model, the mode, the parallel sizes and the last
    event before the hang. When the evidence holds only a wrapper or test script, it says
    the launch line was not captured, the engine options the wrapper passed, and what would
    capture it. The incident notes' reproduction is used only when it is the launch line
    or steps in words. "" when nothing is known (the caller writes a TODO). `fmt` None: the
    form has no reproduction field (the text then leads the description)."""
    ev = policy.evidence
    render = fmt.render if fmt is not None else ""
    notes = "\n".join(
        text.strip()
        for key, text in bundle.manifest.fields
        if key.lower() in REPRODUCTION_FIELDS and text.strip()
    )
    facts = tuple(ev("reproduction", line) for line in story.reproduction)
    if story.command:
        return later(
            _lay_out_reproduction,
            render,
            len(facts),
            ev("reproduction", story.command),
            "",
            "",
            *facts,
        )
    if notes and not _harness_only(notes) and not story.wrapper:
        return later(
            _lay_out_reproduction, render, len(facts), "", ev("reproduction", notes), "", *facts
        )
    if not story.wrapper and not notes and not facts:
        return ""
    program = story.wrapper.split(" ", 1)[0] if story.wrapper else ""
    started = (
        f"the ranks were started by a wrapper script ({md.code(program)}), not by the engine's "
        "launcher"
        if program
        else "the evidence holds only a test script's command"
    )
    missing = f"The engine's launch line was not captured: {started}."
    options: Text = ev("reproduction", story.engine_options) if story.engine_options else ""
    return later(_lay_out_missing, render, len(facts), missing, options, _capture_text(), *facts)


def _capture_text() -> str:
    # A statement, not a TODO: the draft can be filed without it, and says what would tell.
    return f"What would capture it: {LAUNCH_CAPTURE}."


def _lay_out_missing(
    render: str, count: int, missing: str, options: str, capture: str, *facts: str
) -> str:
    if render:
        lines = [f"# {missing}"]
        if options:
            lines.append(f"# Engine options the wrapper passed: {options}")
        lines.extend(f"# {fact}" for fact in facts[:count])
        return md.fence("\n".join(lines), render)
    out = [missing]
    if options:
        out.append("Engine options on the wrapper's command line (masked):")
        out.append(md.fence(options, "shell"))
    if facts:
        out.append("\n".join(f"- {INERT(fact)}" for fact in facts[:count]))
    out.append(capture)
    return "\n\n".join(out)


def _lay_out_reproduction(
    render: str, count: int, command: str, from_notes: str, _unused: str, *facts: str
) -> str:
    if render:
        # GitHub fences a `render:` field itself: the text goes in as plain lines.
        lines = [command] if command else [from_notes]
        lines.extend(f"# {fact}" for fact in facts[:count])
        return md.fence("\n".join(lines), render)
    out: list[str] = []
    if command:
        out.append(
            "Launch line, as captured (secrets and local paths masked; per-run host and "
            "port options left out):"
        )
        out.append(md.fence(command, "shell"))
    else:
        out.append("Steps as reported:")
        out.append(md.fence(from_notes, "text"))
    if facts:
        out.append("\n".join(f"- {INERT(fact)}" for fact in facts[:count]))
    return "\n\n".join(out)
