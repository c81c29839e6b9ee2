"""Hosts of one job: which ranks ran where, in which states, and which hosts gave nothing.

Input: the bundle (dumps and failed dumps carry their host; `[[collect.remote]]` says how each
host's capture went) and the analysed processes. Output: `HostRow`s, one per host, in the
order the collection named them (then first appearance), and the words the verdict uses for
hosts that gave no stack. Empty for a bundle of one host whose capture did not fail.

Example: `report collect --ssh node-a --ssh node-b --ssh node-c` where node-c refused the
connection gives rows `node-a [0-1] stuck 2`, `node-b [2-3] idle 2`, `node-c failed: ssh: connect
to host node-c port 22: Connection refused`, and the summary says that node-c's ranks are not in
the analysis.
"""

from __future__ import annotations

from collections.abc import Sequence

from reporter.analysis.ranksets import format_ranks
from reporter.analysis.result import FailedRank, HostRow, RankProcess
from reporter.core.text import plural
from reporter.model import Bundle

# Rank states in the order the table lists them.
_STATE_ORDER = ("stuck", "moving", "idle", "unknown", "mixed")


def host_rows(
    bundle: Bundle,
    processes: Sequence[RankProcess],
    others: Sequence[RankProcess],
    failed: Sequence[FailedRank],
) -> tuple[HostRow, ...]:
    """One row per host (see the module docstring); () unless there is more than one host
    or a host whose capture gave no stack."""
    notes = {n.name: n for n in bundle.manifest.hosts}
    names = list(notes)
    for host in (*(d.host for d in bundle.dumps), *(f.host for f in bundle.failures)):
        if host and host not in names:
            names.append(host)
    if len(names) < 2 and not any(n.missing for n in notes.values()):
        return ()
    instances = {p.identity.instance for p in processes}
    rows = []
    for name in names:
        mine = [p for p in processes if p.identity.host == name]
        counts = {s: sum(1 for p in mine if p.state.value == s) for s in _STATE_ORDER}
        units = sorted({p.unit for p in mine if p.unit is not None})
        if len(instances) > 1:
            label = " ".join(
                f"{i}:{format_ranks(sorted({p.unit for p in mine if p.identity.instance == i and p.unit is not None}))}"
                for i in sorted(instances, key=int)
                if any(p.identity.instance == i for p in mine)
            )
        else:
            label = format_ranks(units) if units else ""
        note = notes.get(name)
        rows.append(
            HostRow(
                name=name,
                status=note.status if note is not None else "loaded",
                reason=note.reason if note is not None else "",
                ranks=tuple(units),
                label=label,
                pids=tuple(sorted(p.identity.pid for p in mine if p.identity.pid is not None)),
                states=tuple((s, n) for s, n in counts.items() if n),
                failed_dumps=sum(1 for f in failed if f.failure.host == name),
                others=sum(1 for p in others if p.identity.host == name),
            )
        )
    return tuple(rows)


def missing_text(rows: Sequence[HostRow]) -> tuple[str, str]:
    """(sentence for the verdict, confidence note) about hosts that gave no stack; ("", "")
    when every host did."""
    missing = [r for r in rows if r.missing]
    if not missing:
        return "", ""
    named = "; ".join(
        f"{r.name} ({r.status}: {r.reason})" if r.reason else f"{r.name} ({r.status})"
        for r in missing
    )
    sentence = (
        f" Not captured: {named}. The ranks on "
        + ("that host are" if len(missing) == 1 else "those hosts are")
        + " not in this analysis: what they were doing is not known."
    )
    note = (
        f"{len(missing)} of {plural(len(rows), 'host')} gave no stack "
        f"({', '.join(r.name for r in missing)}): their ranks are not known"
    )
    return sentence, note
