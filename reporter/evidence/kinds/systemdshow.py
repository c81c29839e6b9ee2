"""The entry of `systemctl show` output (kind `systemd-show`); the parser (and its
`looks_like`) is `reporter.evidence.systemd`. Sniffed by its keys among the structured
documents, after a Prometheus JSON answer."""

from __future__ import annotations

from reporter.evidence import systemd
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.model import EvidenceKind

ENTRY = KindEntry(
    kind=EvidenceKind.SYSTEMD_SHOW,
    parse=lambda text, read: systemd.parse(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.SYSTEMD_SHOW, SniffStep.STRUCTURED, systemd.looks_like),),
)
