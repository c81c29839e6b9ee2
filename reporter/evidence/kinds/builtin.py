"""The entries of the kinds without a module of their own: parse only.

`reporter.evidence.sniff` tells these apart with its own markers and detector table (their
order is subtle: py-spy against faulthandler, metrics against logs); their records fill
the shared fields (`dumps`, `series`, `environment`, ...) that `fold.CORE_MERGES` merges.
"""

from __future__ import annotations

from dataclasses import replace

from reporter.evidence import (
    env,
    faulthandler,
    flight_recorder,
    logs,
    metrics,
    procstatus,
    pyspy,
    systemd,
)
from reporter.evidence._text import warning_at
from reporter.evidence.kinds.interface import BinaryForm, KindEntry, Parser, Read
from reporter.model import ENVIRONMENT_KINDS, EvidenceKind, ParseResult


def _log(text: str, read: Read) -> ParseResult:
    source = read.source
    result = logs.parse(text, source=source, reference=read.captured_at)
    if flight_recorder.sniff_watchdog(text):
        # The NCCL watchdog's timeout lines are Flight Recorder evidence too.
        traces = flight_recorder.parse_watchdog(text, source=source).flight_recorder
        result = replace(result, flight_recorder=traces)
    return result


def _env(kind: EvidenceKind) -> Parser:
    def parse_env(text: str, read: Read) -> ParseResult:
        # Imported on first use: a bundle of py-spy dumps never needs these parsers.

        return env.parse(kind, text, source=read.source)

    return parse_env


def _unknown(text: str, read: Read) -> ParseResult:
    warning = warning_at(
        read.source, 0, "not recognised as a py-spy dump (text or --json) or a faulthandler dump"
    )
    return ParseResult(warnings=(warning,))


_PARSERS: dict[EvidenceKind, Parser] = {
    EvidenceKind.PYSPY_TEXT: lambda text, read: pyspy.parse_text(text, source=read.source),
    EvidenceKind.PYSPY_JSON: lambda text, read: pyspy.parse_json(text, source=read.source),
    EvidenceKind.FAULTHANDLER: lambda text, read: faulthandler.parse(text, source=read.source),
    EvidenceKind.PROMETHEUS_TEXT: lambda text, read: metrics.parse_text(
        text, source=read.source, captured_at=read.captured_at
    ),
    EvidenceKind.PROMETHEUS_JSON: lambda text, read: metrics.parse_query_range(
        text, source=read.source
    ),
    EvidenceKind.GRAFANA_CSV: lambda text, read: metrics.parse_csv(text, source=read.source),
    EvidenceKind.SYSTEMD_SHOW: lambda text, read: systemd.parse(text, source=read.source),
    EvidenceKind.LOG: _log,
    EvidenceKind.FLIGHT_RECORDER: lambda text, read: flight_recorder.parse_json(
        text, source=read.source, rank=read.rank
    ),
    EvidenceKind.PROC_STATUS: lambda text, read: procstatus.parse(text, source=read.source),
    **{kind: _env(kind) for kind in sorted(ENVIRONMENT_KINDS)},
    EvidenceKind.UNKNOWN: _unknown,
}
# The Flight Recorder's pickled dumps (the only binary evidence): any pickle is taken for
# one, and one that holds code is refused by the parser, loudly.
_FR_PICKLE = BinaryForm(
    magic=2,
    looks_like=flight_recorder.sniff_bytes,
    parse=lambda data, read: flight_recorder.parse_pickle(data, source=read.source, rank=read.rank),
)
ENTRIES: tuple[KindEntry, ...] = tuple(
    KindEntry(
        kind=kind,
        parse=parse,
        binary=_FR_PICKLE if kind is EvidenceKind.FLIGHT_RECORDER else None,
    )
    for kind, parse in _PARSERS.items()
)
