"""Next steps from data: `reporter/data/next_steps.toml` rules matched against the facts of one analysis.

Input: the rules file's text and a `Facts` (verdict, wait kinds, gone ranks, the top
diff change, ... and the values its placeholders are filled from). Output: `Step`s,
in file order, each an action and why. The file is validated on load: an unknown key,
a wrong type, an unknown verdict or placeholder raises `ReporterError` naming the rule
and a fix. Example rule::

    [[rule]]
    id = "gone-rank"
    gone = true
    action = "Look for why {gone} went away: the kernel log ..."
    why = "Its dump failed because the process was no longer there ..."
"""

from __future__ import annotations

import fnmatch
import string
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from reporter.core import rules
from reporter.core.errors import ReporterError
from reporter.model.document import document

PLACEHOLDERS = frozenset(
    {
        "waiting",
        "waited",
        "waiting_who",
        "waited_who",
        "collective",
        "gone",
        "missing",
        "key",
        "before",
        "after",
        "revert",
        "kind",
        "onset",
        "services",
        "timeouts",
        "fr_at",
        "fr_split",
        "fr_files",
        "frozen",
        "frozen_pid",
        "crash",
        "threads",
        "settle",
        "cycles",
    }
)
VERDICTS = frozenset(
    {
        "collective-desync",
        "all-stuck",
        "progressing",
        "inconclusive",
        "crashed",
        "thread-deadlock",
        "p2p-deadlock",
        "gil-held",
        "loop-blocked",
        "stuck",
        "busy",
        "idle",
    }
)
DIFF_KINDS = frozenset({"flag", "env", "package", "source", "excerpt", "gpu", "fact"})
WAITED_STATES = frozenset(
    {
        "idle",
        "moving",
        "stuck",
        "waiting",
        "gone",
        "missing",
        "unknown",
        "mixed",
        "stopped",
        "uninterruptible",
        "unresponsive",
        "crashed",
    }
)
# The closed vocabularies of `when` keys, checked on load so that a typo cannot silently
# turn a rule off.
_CHOICES = {"verdict": VERDICTS, "diff_kind": DIFF_KINDS, "waited": WAITED_STATES}
_TIP = "see the comment at the top of reporter/data/next_steps.toml for the keys and placeholders"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One `[[rule]]`: its conditions (`when`), action and why (with placeholders)."""

    id: str
    when: Mapping[str, bool | tuple[str, ...]]
    action: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What the rules can test, from one analysis; `values` fill the placeholders."""

    verdict: str
    stacks: bool
    wedge: bool
    waited: frozenset[str] = frozenset()
    collectives: frozenset[str] = frozenset()
    waits: frozenset[str] = frozenset()
    frames: tuple[str, ...] = ()
    gone: bool = False
    """True when a rank left: its dump failed because the process was no longer there."""
    missing: bool = False
    """True when a rank is absent from the evidence with nothing saying it left."""
    diff_kinds: frozenset[str] = frozenset()
    timeout: bool = False
    captured: bool = False
    """True when command lines or environments were captured (where a timeout would show)."""
    one_collective: bool = False
    flight_recorder: bool = False
    """True when the Flight Recorder names a first mismatch: it decides, not the stacks."""
    p2p: bool = False
    """True when some waiting rank is in a point-to-point call (`recv`, `send`, ...)."""
    peers: bool = False
    """True when the evidence names the peer of some point-to-point wait."""
    blocked_threads: bool = False
    """True when threads sit blocked in every snapshot with no proven lock cycle."""
    values: Mapping[str, str] = field(default_factory=dict)


@document
class Step:
    """One suggested step.

    A next step of the report and of `analyze --json`; `rule` is the rule id it came from.
    """

    action: str
    why: str
    rule: str


def _fields(text: str, where: str) -> None:
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as err:
        raise ReporterError(f"{where}: bad placeholder braces: {err}", tip=_TIP) from err
    unknown = sorted(set(names) - PLACEHOLDERS)
    if unknown:
        raise ReporterError(
            f"{where}: unknown placeholder {{{unknown[0]}}}",
            tip=f"use one of {', '.join(sorted(PLACEHOLDERS))}",
        )


def parse_rules(text: str, *, source: str = "next_steps.toml") -> tuple[Rule, ...]:
    """Compile a next-steps file; anything malformed raises `ReporterError` naming the rule.

    `reporter.core.rules` checks the shape (keys, types, required `id`/`action`/`why`); this adds
    what a shape cannot say: closed vocabularies, known placeholders, unique ids, no blanks.
    """
    data = rules.parse(text, rules.SHAPES["next_steps.toml"], source=source)
    out: list[Rule] = []
    seen: set[str] = set()
    for index, entry in enumerate(data.get("rule", [])):
        rule_id = entry["id"]
        where = f"{source}: [[rule]] #{index + 1} ({rule_id})"
        if rule_id in seen:
            raise ReporterError(f"{where}: duplicate id", tip="give each rule its own id")
        seen.add(rule_id)
        for key in ("action", "why"):
            if not entry[key].strip():
                raise ReporterError(f"{where}: `{key}` is empty", tip=_TIP)
            _fields(entry[key], f"{where} {key}")
        when: dict[str, bool | tuple[str, ...]] = {}
        # The `when` keys and their types are the shape's (rules.SHAPES): every key
        # besides the strings id, action and why is a flag or a list.
        for key, value in entry.items():
            if isinstance(value, bool):
                when[key] = value
            elif isinstance(value, list):
                choices = _CHOICES.get(key)
                if choices is not None and not set(value) <= choices:
                    bad = sorted(set(value) - choices)[0]
                    raise ReporterError(
                        f"{where}: unknown {key} {bad!r}",
                        tip=f"use one of {', '.join(sorted(choices))}",
                    )
                when[key] = tuple(value)
        out.append(Rule(id=rule_id, when=when, action=entry["action"], why=entry["why"]))
    return tuple(out)


@cache
def default_rules() -> tuple[Rule, ...]:
    """The rules shipped in `reporter/data/next_steps.toml`."""
    return parse_rules(rules.read_text("next_steps.toml"), source="reporter/data/next_steps.toml")


def _any(wanted: Sequence[str], have: Collection[str]) -> bool:
    return any(fnmatch.fnmatchcase(h, w) for w in wanted for h in have)


def applies(rule: Rule, facts: Facts) -> bool:
    """Whether every condition of `rule` holds for `facts`."""
    for key, want in rule.when.items():
        if isinstance(want, bool):
            have = {
                "stacks": facts.stacks,
                "wedge": facts.wedge,
                "gone": facts.gone,
                "missing": facts.missing,
                "timeout": facts.timeout,
                "captured": facts.captured,
                "one_collective": facts.one_collective,
                "flight_recorder": facts.flight_recorder,
                "p2p": facts.p2p,
                "peers": facts.peers,
                "blocked_threads": facts.blocked_threads,
            }[key]
            if have is not want:
                return False
            continue
        pool: Collection[str] = {
            "verdict": frozenset({facts.verdict}),
            "waited": facts.waited,
            "collective": facts.collectives,
            "wait": facts.waits,
            "frame": facts.frames,
            "diff_kind": facts.diff_kinds,
        }[key]
        if not _any(want, pool):
            return False
    return True


def suggest(rules: Sequence[Rule], facts: Facts) -> tuple[Step, ...]:
    """The steps of every rule that applies, in file order, placeholders filled."""
    values = {name: facts.values.get(name, "") for name in PLACEHOLDERS}
    return tuple(
        Step(rule=r.id, action=r.action.format(**values), why=r.why.format(**values))
        for r in rules
        if applies(r, facts)
    )
