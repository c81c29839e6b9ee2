"""The instance the answer speaks of: with several servers or jobs in one bundle, the one in trouble.

Ranks are numbered within an instance, so two servers on one host both have a rank 0.
The summary never merges them: it is built on the analysis narrowed to the instance in
trouble (the one whose verdict is the top-level one: the most severe, then the lowest
id), names that instance by what separated it (`launcher PID 30817 (--port=42209)`), and
says the others' verdicts in one line. With one instance the scope is the analysis itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reporter.analysis.result import Analysis, InstanceVerdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """The analysis narrowed to one instance, its name, and the other instances."""

    analysis: Analysis
    name: str
    """`launcher PID 30817 (--port=42209)`; "" when the bundle holds one instance."""
    instance: InstanceVerdict | None
    others: tuple[InstanceVerdict, ...]


def instance_name(instance: InstanceVerdict) -> str:
    """What separated the instance, without its rank PIDs: `launcher PID 30817 (--port=42209)`."""
    base = instance.label.split("; rank PIDs", 1)[0].strip()
    if not base or base == "all rank processes":
        return f"instance {instance.id}"
    return base


def in_trouble(analysis: Analysis) -> InstanceVerdict | None:
    """The instance whose verdict is the top-level one (lowest id first); None with one instance."""
    if len(analysis.instances) < 2:
        return None
    same = [i for i in analysis.instances if i.verdict is analysis.verdict]
    pool = same or list(analysis.instances)
    return min(pool, key=lambda i: (len(i.id), i.id))


def focus(analysis: Analysis) -> Scope:
    """The analysis narrowed to the instance in trouble (the analysis itself with one)."""
    chosen = in_trouble(analysis)
    if chosen is None:
        return Scope(analysis=analysis, name="", instance=None, others=())
    pids = set(chosen.pids)
    processes = tuple(
        p
        for p in analysis.processes
        if p.identity.instance == chosen.id
        # By PID only for a process with no instance: one PID can name processes of two
        # hosts or containers, which belong to their own instances.
        or (not p.identity.instance and p.identity.pid is not None and p.identity.pid in pids)
    )
    narrowed = replace(
        analysis,
        processes=processes,
        classes=tuple(c for c in analysis.classes if c.instance == chosen.id),
        waits_for=tuple(e for e in analysis.waits_for if e.instance == chosen.id),
        snapshots=max((len(p.snapshots) for p in processes), default=analysis.snapshots),
        instances=(),
    )
    others = tuple(i for i in analysis.instances if i.id != chosen.id)
    return Scope(analysis=narrowed, name=instance_name(chosen), instance=chosen, others=others)
