"""The entries of the kinds without a module of their own: parse only.

`reporter.evidence.sniff` tells these apart with its own markers and detector table (their
order is subtle: py-spy against faulthandler, metrics against logs); their records fill
the shared fields (`dumps`, `series`, `environment`, ...) that `fold.CORE_MERGES` merges.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reporter.evidence import (
    faulthandler,
    flight_recorder,
    logs,
    metrics,
    procstatus,
    pyspy,
    systemd,
)
from reporter.evidence._text import warning_at
from reporter.evidence.kinds.interface import KindEntry, Parser
from reporter.model import ENVIRONMENT_KINDS, EvidenceKind, ParseResult


def _log(text: str, source: str, captured_at: datetime | None) -> ParseResult:
    result = logs.parse(text, source=source, reference=captured_at)
    if flight_recorder.sniff_watchdog(text):
        # The NCCL watchdog's timeout lines are Flight Recorder evidence too.
        traces = flight_recorder.parse_watchdog(text, source=source).flight_recorder
        result = replace(result, flight_recorder=traces)
    return result


def _env(kind: EvidenceKind) -> Parser:
    def parse_env(text: str, source: str, captured_at: datetime | None) -> ParseResult:
        # Imported on first use: a bundle of py-spy dumps never needs these parsers.
        from reporter.evidence import env

        return env.parse(kind, text, source=source)

    return parse_env


def _unknown(text: str, source: str, captured_at: datetime | None) -> ParseResult:
    warning = warning_at(
        source, 0, "not recognised as a py-spy dump (text or --json) or a faulthandler dump"
    )
    return ParseResult(warnings=(warning,))


_PARSERS: dict[EvidenceKind, Parser] = {
    EvidenceKind.PYSPY_TEXT: lambda text, source, _: pyspy.parse_text(text, source=source),
    EvidenceKind.PYSPY_JSON: lambda text, source, _: pyspy.parse_json(text, source=source),
    EvidenceKind.FAULTHANDLER: lambda text, source, _: faulthandler.parse(text, source=source),
    EvidenceKind.PROMETHEUS_TEXT: lambda text, source, at: metrics.parse_text(
        text, source=source, captured_at=at
    ),
    EvidenceKind.PROMETHEUS_JSON: lambda text, source, _: metrics.parse_query_range(
        text, source=source
    ),
    EvidenceKind.GRAFANA_CSV: lambda text, source, _: metrics.parse_csv(text, source=source),
    EvidenceKind.SYSTEMD_SHOW: lambda text, source, _: systemd.parse(text, source=source),
    EvidenceKind.LOG: _log,
    EvidenceKind.FLIGHT_RECORDER: lambda text, source, _: flight_recorder.parse_json(
        text, source=source
    ),
    EvidenceKind.PROC_STATUS: lambda text, source, _: procstatus.parse(text, source=source),
    **{kind: _env(kind) for kind in sorted(ENVIRONMENT_KINDS)},
    EvidenceKind.UNKNOWN: _unknown,
}
ENTRIES: tuple[KindEntry, ...] = tuple(
    KindEntry(kind=kind, parse=parse) for kind, parse in _PARSERS.items()
)
