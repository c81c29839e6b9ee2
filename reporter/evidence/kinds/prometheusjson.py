"""The entry of a Prometheus `query_range` answer (kind `prometheus-json`); the parser is
`reporter.evidence.metrics`. Sniffed as a JSON object with `status`, `resultType` or `data`
near its start, first of the structured documents."""

from __future__ import annotations

import re

from reporter.evidence import metrics
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.model import EvidenceKind

_JSON_RE = re.compile(r'\A\ufeff?\s*\{[\s\S]{0,200}?"(?:status|resultType|data)"\s*:')


ENTRY = KindEntry(
    kind=EvidenceKind.PROMETHEUS_JSON,
    parse=lambda text, read: metrics.parse_query_range(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.PROMETHEUS_JSON, SniffStep.STRUCTURED, _JSON_RE.match),),
)
