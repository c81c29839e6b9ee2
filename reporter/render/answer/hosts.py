"""Hosts in the answer: which host each side of a wait is on, and the hosts that gave nothing.

Input: the analysis (its processes carry their host; `Analysis.hosts` has one row per host,
with how its capture went). Output: words for the summary block. Said only when the
evidence spans more than one host, or a host's capture failed:

- `hosts_line`: `node-a: ranks [0-1], 2 stuck; node-b: not captured (failed: ssh: ...),
  ranks [2-3] should be there`, the line that puts every host on the first screen;
- `on_hosts(units)`: ` on node-a` (or ` on node-a and node-b`) after a rank set;
- `expected_ranks`: the ranks a host that gave no stack should hold, when the evidence
  settles it (one such host, and the ranks missing from the world size).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from reporter.analysis.ranksets import format_pids, format_ranks
from reporter.analysis.result import Analysis, HostRow
from reporter.core.text import plural
from reporter.render.answer.records import SummaryLine, WaitEdge, WaitSide

HOSTS = "Hosts"


def multi_host(analysis: Analysis) -> bool:
    """Whether hosts are worth naming: several hosts, or one whose capture failed."""
    return len(analysis.hosts) > 1 or any(r.missing for r in analysis.hosts)


def expected_ranks(analysis: Analysis) -> dict[str, tuple[int, ...]]:
    """{host: ranks} for hosts that gave no stack: the ranks missing from the evidence
    when exactly one host gave none; {} when that is not settled."""
    missing = [r for r in analysis.hosts if r.missing and not r.ranks]
    if len(missing) != 1 or not analysis.missing_ranks:
        return {}
    return {missing[0].name: tuple(analysis.missing_ranks)}


def host_of_units(analysis: Analysis, units: Sequence[int], instance: str = "") -> list[str]:
    """The hosts of the rank processes of `units` (missing ranks: the host that should
    hold them), in the hosts' order."""
    wanted = set(units)
    found = {
        p.identity.host
        for p in analysis.processes
        if p.unit in wanted and (not instance or p.identity.instance == instance)
        if p.identity.host
    }
    for host, ranks in expected_ranks(analysis).items():
        if wanted & set(ranks):
            found.add(host)
    return _in_host_order(analysis, found)


def _in_host_order(analysis: Analysis, hosts: Iterable[str]) -> list[str]:
    """`hosts` in the order of the Hosts table; any it does not list last, by name."""
    order = [r.name for r in analysis.hosts]
    return sorted(hosts, key=lambda h: (order.index(h) if h in order else len(order), h))


def on_hosts(analysis: Analysis, units: Sequence[int], instance: str = "") -> str:
    """` on node-a`, ` on node-a and node-b`; "" with one host or none known."""
    if not multi_host(analysis):
        return ""
    hosts = host_of_units(analysis, units, instance)
    return f" on {' and '.join(hosts)}" if hosts else ""


def split_by_host(analysis: Analysis, units: Sequence[int], instance: str = "") -> str:
    """` on node-a` when `units` sit on one host; ` (node-a: [0-1]; node-b: [2])` when they
    span several (a label beside a sentence that already says ` on node-a and node-b`
    then adds which ranks are where); "" with one host or none known."""
    if not multi_host(analysis):
        return ""
    wanted = set(units)
    where: dict[str, set[int]] = {}
    for p in analysis.processes:
        if (
            p.unit in wanted
            and p.identity.host
            and (not instance or p.identity.instance == instance)
        ):
            where.setdefault(p.identity.host, set()).add(p.unit)
    if len(where) <= 1:
        return on_hosts(analysis, units, instance)
    hosts = _in_host_order(analysis, where)
    return " (" + "; ".join(f"{h}: {format_ranks(where[h])}" for h in hosts) + ")"


def with_hosts(analysis: Analysis, edges: Sequence[WaitEdge]) -> tuple[WaitEdge, ...]:
    """The edges with each side's name carrying its host(s) when the evidence spans hosts."""
    if not multi_host(analysis):
        return tuple(edges)

    def side(s: WaitSide) -> WaitSide:
        where = on_hosts(analysis, s.ranks or s.pids)
        if not where or where in s.name:
            return s
        return replace(s, name=f"{s.name}{where}")

    return tuple(replace(e, waiting=side(e.waiting), waited=side(e.waited)) for e in edges)


def _row_text(row: HostRow, expected: dict[str, tuple[int, ...]], unit: str) -> str:
    noun = "ranks" if unit == "rank" else "PIDs"
    if row.missing:
        why = f"{row.status}: {row.reason}" if row.reason else row.status
        should = expected.get(row.name)
        held = (
            f", {noun} {format_ranks(should)} should be there, state not known"
            if should
            else ", its ranks not known"
        )
        return f"{row.name}: not captured ({why}){held}"
    if unit == "rank":
        label = row.label or format_ranks(row.ranks)
        what = f"ranks {label}" if label else "no ranks"
    else:
        what = f"PIDs {format_pids(row.pids)}" if row.pids else "no ranks"
    states = ", ".join(f"{n} {s}" for s, n in row.states)
    return f"{row.name}: {what}" + (f" ({states})" if states else "")


def hosts_line(analysis: Analysis) -> SummaryLine | None:
    """Every host on the first screen, with its ranks and states, and the ones not captured
    with the ranks they should hold; None with one host captured in full."""
    if not multi_host(analysis):
        return None
    expected = expected_ranks(analysis)
    rows = "; ".join(_row_text(r, expected, analysis.rank_unit) for r in analysis.hosts)
    lost = [r for r in analysis.hosts if r.missing]
    lead = (
        f"{len(lost)} of {plural(len(analysis.hosts), 'host')} not captured, so the verdict "
        "rests on part of the job. "
        if lost
        else ""
    )
    sources: list[str] = []
    for row in analysis.hosts:
        dump = next(
            (
                str(p.snapshots[-1].source)
                for p in analysis.processes
                if p.identity.host == row.name and p.snapshots
            ),
            "",
        )
        if dump:
            sources.append(dump)
    if lost:
        sources.append("bundle.toml")
    return SummaryLine(topic=HOSTS, text=f"{lead}{rows}.", sources=tuple(sources))
