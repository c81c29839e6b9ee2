"""The entry of log files (kind `log`); the parser is `reporter.evidence.logs`.

Sniffed by its shape, after the metric kinds: at least `LOG_SHARE` of the head's first
lines carry a time, or it holds an NCCL watchdog timeout line. The watchdog's lines are
Flight Recorder evidence too (`flight_recorder.parse_watchdog`); its log events are its
own field, undated ones last in file order.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from reporter.evidence import flight_recorder, logs
from reporter.evidence.kinds.interface import (
    FieldMerge,
    KindEntry,
    Read,
    SniffStep,
    flat,
    on_host,
    sniffed,
)
from reporter.model import EvidenceKind, ParseResult

# Share of a head's first lines that must carry a time for the file to count as a log.
LOG_SHARE = 0.3
_LATEST = datetime.max.replace(tzinfo=UTC)


def looks_like(head: str) -> bool:
    """Mostly timestamped lines, or an NCCL watchdog timeout."""
    return logs.stamped_share(head) >= LOG_SHARE or flight_recorder.sniff_watchdog(head)


def parse(text: str, read: Read) -> ParseResult:
    """The log's events (year-less times take the manifest's year), and the watchdog's
    Flight Recorder traces when it holds its timeout lines."""
    source = read.source
    result = logs.parse(text, source=source, reference=read.captured_at)
    if flight_recorder.sniff_watchdog(text):
        traces = flight_recorder.parse_watchdog(text, source=source).flight_recorder
        result = replace(result, flight_recorder=traces)
    return result


ENTRY = KindEntry(
    kind=EvidenceKind.LOG,
    parse=parse,
    sniffs=(sniffed(EvidenceKind.LOG, SniffStep.SHAPE, looks_like),),
    merges=(
        FieldMerge(
            "log_events",
            stamp=on_host,
            finish=flat(key=lambda e: (e.at is None, e.at or _LATEST)),
        ),
    ),
)
