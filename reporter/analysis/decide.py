"""The verdict, decided once: the first rule of `reporter/data/verdicts.toml` whose conditions
hold over the facts of one analysis.

Input: the analysis before its verdict (`Analysis` with the stack reading as placeholder) and
the `Facts` gathered by `analyze.py`: the stack reading of the ranks (`verdict.py`), the
process state outcomes (`outcomes.read`), the Flight Recorder (`flight_recorder.read`), the
hosts that gave no stack, the wait-for graph and its one-process reading (`procgraph.py`).
Output: the `Analysis` with the verdict, summary, confidence, signature, headline, "Who
waits for whom" line and the rule's own next steps, all from the winning rule. This is the
only module that sets `Analysis.verdict` (tests/analysis/test_decide.py holds that). Example
rule::

    [[rule]]
    id = "gil-held"
    one_process = true
    process = ["gil"]
    verdict = "gil-held"
    summary = ["process", "crashes", "frozen", "hosts"]
    confidence = "process"
    signature = "process"
    headline = "{thread} of {who} holds the GIL at {at} in every snapshot; {others} cannot run"
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from reporter.analysis.classify import Classifier
from reporter.analysis.flight_recorder import FrReading
from reporter.analysis.outcomes import Outcome, crash_lock_signature
from reporter.analysis.procgraph import ProcessReading
from reporter.analysis.result import Analysis, BlockedThreads, Confidence, Signature, Verdict
from reporter.analysis.signature import make_signature
from reporter.analysis.verdict import PEERS_UNKNOWN
from reporter.analysis.waitgraph import EdgeKind, Graph
from reporter.analysis.waits_verdict import WaitReading
from reporter.core import rules
from reporter.core.errors import ReporterError

PIECES = frozenset(
    {
        "waits",
        "stack",
        "process",
        "crashes",
        "crash_first",
        "deadlocks",
        "frozen",
        "blocked",
        "hosts",
        "fr",
    }
)
LEVELS = frozenset({"stack", "crash", "deadlock", "process"})
SIGNATURES = frozenset({"stack", "crash-locks", "process"})
PLACEHOLDERS = frozenset(
    {
        "who",
        "pid",
        "thread",
        "at",
        "call",
        "handler",
        "peer",
        "others",
        "snapshots",
        "stacks",
        "wait_headline",
        "wait_what",
        "wait_who",
    }
)
STACK_READINGS = frozenset(
    v.value
    for v in (
        Verdict.COLLECTIVE_DESYNC,
        Verdict.P2P_DEADLOCK,
        Verdict.ALL_STUCK,
        Verdict.PROGRESSING,
        Verdict.INCONCLUSIVE,
    )
)
PROCESS_READINGS = frozenset(
    {"gil", "loop-blocked", "busy", "moving", "blocked", "idle", "one-moment"}
)
EDGE_KINDS = frozenset(k.value for k in EdgeKind)
_LEVELS = (Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW)
_NO_STACKS = "No rank stacks in the evidence; this rests on the Flight Recorder."


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One row of the verdict table: conditions (None: any) and what it gives."""

    id: str
    verdict: Verdict
    summary: tuple[str, ...]
    confidence: str
    signature: str
    note: str = ""
    headline: str = ""
    who_waits: str = ""
    what: str = ""
    recovers: str = ""
    steps: tuple[tuple[str, str], ...] = ()
    stacks: frozenset[str] | None = None
    process: frozenset[str] | None = None
    waits: frozenset[str] | None = None
    """Ids of `wait_rules.toml` rules: the wait reading's rule must be one of them."""
    edges: frozenset[str] | None = None
    flags: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """Everything the table reads, and the pieces its rules pick from."""

    stacks: Verdict
    """The stack reading of the ranks of the main instance (`verdict.decide`)."""
    stack_text: str
    stack_level: Confidence
    stack_notes: tuple[str, ...]
    stack_signature: Signature
    outcome: Outcome
    hosts_sentence: str
    hosts_note: str
    fr: FrReading
    process: ProcessReading | None
    graph: Graph
    waits: WaitReading | None = None
    """The reading of the waits beyond collectives (`waits_verdict.read` over `graph`)."""

    def flag(self, name: str) -> bool:
        """The boolean facts a rule may name."""
        if name == "flight_recorder":
            return self.fr.mismatch
        if name == "fr_idle":
            return self.fr.idle
        if name == "crash":
            return self.outcome.crash
        if name == "thread_deadlock":
            return bool(self.outcome.deadlocks)
        if name == "one_process":
            return self.process is not None
        if name == "cycle":
            return bool(self.graph.cycles())
        if name == "dead_wait":
            return bool(self.graph.dead_waits())
        raise KeyError(name)


def _check_text(text: str, where: str) -> None:
    for _, name, _, _ in string.Formatter().parse(text):
        if name is not None and name not in PLACEHOLDERS:
            raise ReporterError(
                f"reporter/data/verdicts.toml: {where} names an unknown placeholder {{{name}}}",
                tip="use one of " + ", ".join(sorted(PLACEHOLDERS)),
            )


def compile_rules(data: Mapping[str, Any]) -> tuple[Rule, ...]:
    """The checked rules of a parsed verdicts.toml; raises `ReporterError` naming the rule."""
    out: list[Rule] = []
    seen: set[str] = set()
    for table in data.get("rule", []):
        ident = table["id"]
        where = f'[[rule]] "{ident}"'

        def bad(what: str, tip: str, where: str = where) -> ReporterError:
            return ReporterError(f"reporter/data/verdicts.toml: {where}: {what}", tip=tip)

        if ident in seen:
            raise bad("the id is used twice", "give every rule its own id")
        seen.add(ident)
        try:
            verdict = Verdict(table["verdict"])
        except ValueError:
            raise bad(
                f"unknown verdict {table['verdict']!r}", "add it to Verdict in result.py first"
            ) from None
        unknown = set(table["summary"]) - PIECES
        if unknown:
            raise bad(f"unknown summary pieces {sorted(unknown)}", f"use {sorted(PIECES)}")
        if table["confidence"] not in LEVELS:
            raise bad(f"unknown confidence {table['confidence']!r}", f"use {sorted(LEVELS)}")
        if table["signature"] not in SIGNATURES:
            raise bad(f"unknown signature {table['signature']!r}", f"use {sorted(SIGNATURES)}")
        for key, allowed in (
            ("stacks", STACK_READINGS),
            ("process", PROCESS_READINGS),
            ("edges", EDGE_KINDS),
        ):
            wrong = set(table.get(key, ())) - allowed
            if wrong:
                raise bad(f"unknown {key} {sorted(wrong)}", f"use {sorted(allowed)}")
        steps = tuple((s["action"], s["why"]) for s in table.get("step", ()))
        texts = (
            table.get("headline", ""),
            table.get("who_waits", ""),
            table.get("what", ""),
            table.get("recovers", ""),
        )
        for text in (*texts, *sum(steps, ())):
            _check_text(text, where)
        out.append(
            Rule(
                id=ident,
                verdict=verdict,
                summary=tuple(table["summary"]),
                confidence=table["confidence"],
                signature=table["signature"],
                note=table.get("note", ""),
                headline=table.get("headline", ""),
                who_waits=table.get("who_waits", ""),
                recovers=table.get("recovers", ""),
                what=table.get("what", ""),
                steps=steps,
                stacks=frozenset(table["stacks"]) if "stacks" in table else None,
                process=frozenset(table["process"]) if "process" in table else None,
                waits=frozenset(table["waits"]) if "waits" in table else None,
                edges=frozenset(table["edges"]) if "edges" in table else None,
                flags=tuple((k, bool(table[k])) for k in rules.VERDICT_FLAGS if k in table),
            )
        )
    if not out or any(r.stacks or r.process or r.waits or r.edges or r.flags for r in out[-1:]):
        raise ReporterError(
            "reporter/data/verdicts.toml: the last rule must have no condition",
            tip="end the table with a rule that always applies (inconclusive)",
        )
    return tuple(out)


@cache
def table() -> tuple[Rule, ...]:
    """The packaged verdict table, checked and compiled (read once)."""
    return compile_rules(rules.load("verdicts.toml"))


def applies(rule: Rule, facts: Facts) -> bool:
    """Whether every condition of `rule` holds."""
    if rule.stacks is not None and facts.stacks.value not in rule.stacks:
        return False
    if rule.process is not None and (
        facts.process is None or facts.process.kind not in rule.process
    ):
        return False
    if rule.waits is not None and (facts.waits is None or facts.waits.rule not in rule.waits):
        return False
    if rule.edges is not None and not rule.edges & {e.kind.value for e in facts.graph.edges}:
        return False
    return all(facts.flag(name) is want for name, want in rule.flags)


def winner(facts: Facts, rules_: Sequence[Rule] | None = None) -> Rule:
    """The first rule that applies (the table ends with one that always does)."""
    for rule in rules_ if rules_ is not None else table():
        if applies(rule, facts):
            return rule
    raise AssertionError("the verdict table ends with a rule that always applies")


def _pieces(facts: Facts) -> dict[str, str]:
    outcome = facts.outcome
    rest = f"The rest of the evidence: {facts.stack_text}" if outcome.live else ""
    before = "" if facts.stacks is Verdict.INCONCLUSIVE else facts.stack_text
    return {
        "stack": facts.stack_text,
        "process": facts.process.sentence if facts.process is not None else "",
        "crashes": outcome.crashes,
        "crash_first": " ".join(p for p in (outcome.crashes, rest) if p),
        "deadlocks": " ".join(p for p in (outcome.deadlock_lines, outcome.crashes, before) if p),
        "frozen": outcome.frozen,
        "blocked": outcome.blocked_text,
        "hosts": facts.hosts_sentence,
        "fr": facts.fr.sentence,
        "waits": facts.waits.who + "." if facts.waits is not None else "",
    }


def _summary(rule: Rule, facts: Facts) -> str:
    pieces = _pieces(facts)
    text = " ".join(p.strip() for name in rule.summary if (p := pieces[name]).strip())
    if "fr" in rule.summary and facts.fr.fr is not None and facts.fr.no_stacks:
        # The stack summary can only say there are no stacks; the recorder speaks instead.
        text = " ".join(p for p in (_NO_STACKS, facts.fr.sentence.strip()) if p)
    return text


def _confidence(rule: Rule, facts: Facts) -> tuple[Confidence, tuple[str, ...]]:
    if rule.confidence == "crash":
        level, notes = facts.outcome.crash_level, facts.outcome.crash_notes
    elif rule.confidence == "deadlock":
        level, notes = facts.outcome.deadlock_level, facts.outcome.deadlock_notes
    elif rule.confidence == "process" and facts.process is not None:
        notes = facts.process.notes
        level = _LEVELS[min(len(notes), len(_LEVELS) - 1)]
    else:
        level, notes = facts.stack_level, facts.stack_notes
        if PEERS_UNKNOWN in notes and _peers_named(rule, facts):
            # The wait-for graph names the peers the stacks could not (Work.wait of an
            # irecv from a known source): that doubt is answered.
            notes = tuple(n for n in notes if n != PEERS_UNKNOWN)
            level = _LEVELS[max(_LEVELS.index(level) - 1, 0)]
    if facts.hosts_note:
        level = _LEVELS[min(_LEVELS.index(level) + 1, len(_LEVELS) - 1)]
        notes = (*notes, facts.hosts_note)
    if rule.note and rule.verdict is not facts.stacks:
        # Said, not counted: the rule's own source of the verdict is not a doubt about it.
        notes = (*notes, rule.note.format(stacks=facts.stacks.value))
    return level, notes


def _peers_named(rule: Rule, facts: Facts) -> bool:
    """Whether the wait reading the rule rests on names the peer of every p2p wait."""
    if rule.waits is None or facts.waits is None:
        return False
    p2p = [e for e in facts.waits.edges if e.kind is EdgeKind.P2P]
    return bool(p2p) and all(e.peer is not None for e in p2p)


def _fill(text: str, facts: Facts) -> str:
    if not text:
        return ""
    values = dict.fromkeys(PLACEHOLDERS, "")
    values["stacks"] = facts.stacks.value
    if facts.process is not None:
        values.update(facts.process.placeholders())
    if facts.waits is not None:
        values.update(
            wait_headline=facts.waits.headline,
            wait_what=facts.waits.what,
            wait_who=facts.waits.who,
        )
    filled = text.format(**values)
    # A placeholder may open the line ("the main thread waits ..."); names stay as written.
    if filled.split(" ", 1)[0] in _LOWER_OPENERS:
        filled = filled[:1].upper() + filled[1:]
    return filled


_LOWER_OPENERS = frozenset({"the", "thread", "rank", "one", "every", "nothing"})


def _said(rule: Rule, facts: Facts) -> str:
    """The part of the summary paragraph the rule's own lines already say (left out of the
    paragraph on the first screen)."""
    if facts.process is not None and "process" in rule.summary and rule.headline:
        return facts.process.sentence
    if rule.waits is not None and "waits" in rule.summary:
        return _pieces(facts)["waits"]
    return ""


def _wait_steps(rule: Rule, facts: Facts) -> tuple[tuple[str, str], ...]:
    """The steps of the wait rule a `waits` rule rests on (wait_rules.toml)."""
    if rule.waits is None or facts.waits is None:
        return ()
    return facts.waits.steps


def _explained(
    rule: Rule, facts: Facts, blocked: tuple[BlockedThreads, ...]
) -> tuple[BlockedThreads, ...]:
    """The blocked threads the wait rule's verdict does not account for. A process that is a
    waiter of the deciding edges waits for what the verdict names (a lock copied locked
    across fork, a pipe, a child, the kernel): "not proven a deadlock" and "settle which
    locks they hold" would contradict it, so its blocked threads are no longer open."""
    if rule.waits is None or facts.waits is None or not blocked:
        return blocked
    waiters = {
        node.pid
        for edge in facts.waits.edges
        for key in edge.waiters
        if (node := facts.graph.nodes.get(key)) is not None and node.pid is not None
    }
    return tuple(b for b in blocked if b.pid is None or b.pid not in waiters)


def _rule_evidence(rule: Rule, facts: Facts) -> tuple[str, ...]:
    """What the rule's own lines rest on: the deciding wait edges' evidence, then that of the
    sides they wait for (the nodes and the waits those nodes are in), each once. A bundle's
    first stack dump may be another process's (the live worker of a dead-worker wait), so a
    claim about the waiter cites the waiter's own dump and /proc lines; one about the waited
    side (a parent's threads holding the lock at fork, a child that waits in turn for a
    server) cites that side's."""
    if rule.waits is None or facts.waits is None:
        return ()
    graph = facts.graph
    places = [place for e in facts.waits.edges for place in e.evidence]
    waited = {key for e in facts.waits.edges for key in e.waited}
    for key in sorted(waited):
        node = graph.nodes.get(key)
        if node is not None:
            places.extend(node.evidence)
    places.extend(
        place for e in graph.edges if waited.intersection(e.waiters) for place in e.evidence
    )
    return tuple(dict.fromkeys(places))


def _recovers(rule: Rule, facts: Facts) -> str:
    """The rule's "Recovers on its own" answer, else its wait rule's; "" leaves the answer
    to the timeouts found."""
    if rule.recovers:
        return _fill(rule.recovers, facts)
    if rule.waits is not None and facts.waits is not None:
        return facts.waits.recovers
    return ""


def decide(analysis: Analysis, facts: Facts, classifier: Classifier) -> Analysis:
    """`analysis` with the verdict of the first rule that applies, and everything that rule
    gives: summary, confidence, signature, headline, who-waits line and next steps."""
    rule = winner(facts)
    level, notes = _confidence(rule, facts)
    if rule.signature == "crash-locks":
        signature = crash_lock_signature(facts.outcome, rule.verdict, classifier)
    elif rule.signature == "process" and facts.process is not None:
        signature = make_signature(rule.verdict, (), classifier, facts.process.signature_lines)
    else:
        signature = facts.stack_signature
    return replace(
        analysis,
        verdict=rule.verdict,
        confidence=level,
        confidence_notes=notes,
        summary=_summary(rule, facts),
        signature=signature,
        rule=rule.id,
        headline=_fill(rule.headline, facts),
        who_waits=_fill(rule.who_waits, facts),
        what=_fill(rule.what, facts),
        recovers=_recovers(rule, facts),
        rule_evidence=_rule_evidence(rule, facts),
        said=_said(rule, facts),
        rule_steps=(
            *((_fill(a, facts), _fill(w, facts)) for a, w in rule.steps),
            *_wait_steps(rule, facts),
        ),
        graph=facts.graph,
        blocked_threads=_explained(rule, facts, analysis.blocked_threads),
    )
