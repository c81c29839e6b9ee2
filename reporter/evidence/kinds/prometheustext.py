"""The entry of Prometheus exposition text (kind `prometheus-text`, one scrape or several
`# scrape at` blocks); the parser is `reporter.evidence.metrics`. Sniffed by its `# TYPE`,
`# HELP` or `# scrape at` comments among the structured documents, else (after a Grafana
CSV header) when its first lines are all samples. Its series merge with the other metric
kinds' (`fold.CORE_MERGES`)."""

from __future__ import annotations

import re

from reporter.evidence import metrics
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.model import EvidenceKind

_COMMENT_RE = re.compile(r"(?m)^#\s*(?:TYPE|HELP)\s+[A-Za-z_:][\w:]*\s|^#\s*scrape at\s")
_SAMPLE_RE = re.compile(
    r"[A-Za-z_:][\w:]*(?:\{[^}\n]*\})?[ \t]+[-+]?(?:\d|\.\d|NaN|Inf)[^\s]*(?:[ \t]+-?\d+)?[ \t]*"
)


def has_comments(head: str) -> bool:
    """A `# TYPE`, `# HELP` or `# scrape at` line."""
    return _COMMENT_RE.search(head) is not None


def samples_only(head: str) -> bool:
    """The first 20 non-blank lines are all exposition-format samples."""
    lines = [line.strip() for line in head.split("\n")[:50] if line.strip()]
    return bool(lines) and all(_SAMPLE_RE.fullmatch(line) for line in lines[:20])


ENTRY = KindEntry(
    kind=EvidenceKind.PROMETHEUS_TEXT,
    parse=lambda text, read: metrics.parse_text(
        text, source=read.source, captured_at=read.captured_at
    ),
    sniffs=(
        sniffed(EvidenceKind.PROMETHEUS_TEXT, SniffStep.STRUCTURED, has_comments),
        sniffed(EvidenceKind.PROMETHEUS_TEXT, SniffStep.SHAPE, samples_only),
    ),
)
