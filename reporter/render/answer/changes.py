"""The "Top change since the last good run" line: the change that scores highest, where each
run sets it, and how to undo it (`revert_words`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reporter.analysis.result import Analysis
from reporter.core.text import plural
from reporter.model import Bundle, Location
from reporter.render.answer.records import SummaryLine
from reporter.render.answer.topics import CHANGE

if TYPE_CHECKING:
    from reporter.analysis.diff import Change


_KIND_WORDS = {"env": "env var", "flag": "server option", "package": "package"}


def top_change(analysis: Analysis) -> Change | None:
    if analysis.diff is None:
        return None
    return next((c for c in analysis.diff.changes if c.score > 0), None)


def _change_sources(bundle: Bundle, change: Change) -> tuple[str, ...]:
    """Where the top change's values sit: the variable or command line in each run."""
    out: list[str] = []
    for side in (bundle, bundle.baseline):
        if side is None:
            continue
        env = side.environment
        prefix = "" if side is bundle else baseline_prefix(bundle)
        hit: Location | None = next((v.source for v in env.variables if v.name == change.key), None)
        if hit is None:
            hit = next(
                (c.source for c in env.cmdlines if any(f.name == change.key for f in c.flags)),
                None,
            )
        if hit is None:
            hit = next((p.source for p in env.packages if p.name == change.key), None)
        if hit is not None:
            out.append(f"{prefix}{hit}")
    return tuple(out)


def baseline_prefix(bundle: Bundle) -> str:
    """How the baseline's files are named: the manifest's folder, else the baseline's path."""
    base = bundle.manifest.baseline.strip("/")
    if not base and bundle.baseline is not None and bundle.baseline.root:
        base = bundle.baseline.root.rstrip("/")
    return f"{base}/" if base else "baseline: "


def short_value(value: str | None) -> str:
    if value is None:
        return "(absent)"
    return f"`{value}`" if len(value) <= 40 else f"`{value[:39]}…`"


def change_words(change: Change) -> str:
    """`` `X` `256` → `512` ``, `` `X` newly set to `512` ``, `` `X` unset (was `256`) ``."""
    if change.before is None:
        return f"`{change.key}` newly set to {short_value(change.after)}"
    if change.after is None:
        return f"`{change.key}` unset (was {short_value(change.before)})"
    return f"`{change.key}` {short_value(change.before)} → {short_value(change.after)}"


def revert_words(change: Change) -> str:
    """How to undo the change, naming the knob: `set `X` back to `256``, `unset `X``."""
    kind = change.kind.value
    if kind == "package":
        if change.before is None:
            return f"uninstall `{change.key}`"
        return f"pin `{change.key}` back to {short_value(change.before)}"
    if change.before is None:
        return f"remove `{change.key}`" if kind == "flag" else f"unset `{change.key}`"
    return f"set `{change.key}` back to {short_value(change.before)}"


def change_line(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    diff = analysis.diff
    if diff is None:
        return SummaryLine(
            topic=CHANGE,
            text=(
                "Not known: no last good run in the evidence (`--baseline DIR`, or `good/` and "
                "`bad/` folders side by side, would rank what changed)."
            ),
            sources=(),
        )
    change = top_change(analysis)
    found = (
        f" {bundle.baseline_note[0].upper()}{bundle.baseline_note[1:]}."
        if bundle.baseline_note
        else ""
    )
    if change is None:
        text = (
            f"None that matters: {plural(len(diff.changes), 'change')}, all per-run noise"
            if diff.changes
            else "None: the compared evidence is the same"
        )
        return SummaryLine(topic=CHANGE, text=f"{text}.{found}", sources=())
    total = len(diff.changes)
    text = (
        f"{change_words(change)} ({_KIND_WORDS.get(change.kind.value, change.kind.value)}, "
        f"ranked first of {plural(total, 'change')}, score {change.score}).{found}"
    )
    return SummaryLine(topic=CHANGE, text=text, sources=_change_sources(bundle, change))
