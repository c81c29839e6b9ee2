"""A process's place in the tree (kind `proc-family`) into `ProcessRelation` records.

`report collect` writes one such file per target and round (`proc/pid4711-s0.family`)
from `/proc/PID/stat`, `status`, `task/*/children` and each child's `stat`::

    # report-proc: family pid=4700 snapshot=1 at=2026-12-07T12:40:01.5Z
    Pid:	4700
    PPid:	4690
    State:	S
    Comm:	python3
    Uid:	1000
    Threads:	2
    StartTicks:	8812345
    Started:	2026-12-07T12:31:02.450000Z
    Child:	4711	Z	python3
    Child:	4712	S	python3

`Child:` lines are `PID<TAB>state<TAB>comm`, zombies (`Z`) included. `Started` is absent
when the boot time could not be read. Unknown keys are ignored (later captures may add some).
"""

from __future__ import annotations

from reporter.core.times import parse_iso
from reporter.evidence import prochead
from reporter.evidence._text import excerpt, warning_at
from reporter.evidence.kinds.interface import round_read_entry
from reporter.model import ChildProcess, EvidenceKind, Location, ParseResult, ProcessRelation

SNIFF = prochead.sniffer("family")


def looks_like(head: str) -> bool:
    """True when `head` starts with the `family` header."""
    return SNIFF.match(head) is not None


def _int(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def parse(text: str, *, source: str) -> ParseResult:
    """The one relation `text` holds; never raises on malformed input."""
    head, rows, warnings = prochead.lines(text, source=source, kind="family")
    if head is None:
        return ParseResult(warnings=tuple(warnings))
    values: dict[str, str] = {}
    children: list[ChildProcess] = []
    for number, line in rows:
        key, sep, value = line.partition(":")
        if not sep:
            warnings.append(warning_at(source, number, f"not a `Key: value` line: {excerpt(line)}"))
            continue
        value = value.strip("\t ")
        if key == "Child":
            parts = value.split("\t", 2)
            if not parts[0].isdigit():
                warnings.append(warning_at(source, number, f"not a child row: {excerpt(line)}"))
                continue
            children.append(
                ChildProcess(
                    pid=int(parts[0]),
                    state=parts[1] if len(parts) > 1 else "",
                    comm=prochead.unescape(parts[2]) if len(parts) > 2 else "",
                )
            )
        else:
            values.setdefault(key, value)
    started = parse_iso(values["Started"])[0] if values.get("Started") else None
    relation = ProcessRelation(
        pid=_int(values.get("Pid", "")) or head.pid,
        ppid=_int(values.get("PPid", "")),
        state=values.get("State", ""),
        comm=prochead.unescape(values.get("Comm", "")),
        uid=_int(values.get("Uid", "")),
        start_ticks=_int(values.get("StartTicks", "")),
        started_at=started,
        threads=_int(values.get("Threads", "")),
        children=tuple(children),
        captured_at=head.at,
        snapshot=head.snapshot,
        source=Location(path=source, line=1),
    )
    return ParseResult(process_relations=(relation,), warnings=tuple(warnings))


ENTRY = round_read_entry(
    EvidenceKind.PROC_FAMILY,
    name="family",
    says="parent, children and start time",
    field="process_relations",
    parse=parse,
    looks_like=looks_like,
)
