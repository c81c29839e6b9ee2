"""The entry of a Grafana CSV export (kind `grafana-csv`); the parser is
`reporter.evidence.metrics`. Sniffed by a CSV header starting with `Time` (or `Series`),
after the exposition comments and before exposition samples."""

from __future__ import annotations

import re

from reporter.evidence import metrics
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.model import EvidenceKind

_HEAD_RE = re.compile(r'\A\ufeff?(?:sep=.\r?\n)?"?(?:Time|time|Series|series)"?[,;\t]')


ENTRY = KindEntry(
    kind=EvidenceKind.GRAFANA_CSV,
    parse=lambda text, read: metrics.parse_csv(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.GRAFANA_CSV, SniffStep.STRUCTURED, _HEAD_RE.match),),
)
