"""The entry of py-spy's `--json` dumps (kind `pyspy-json`); the parser is
`reporter.evidence.pyspy`. Sniffed on the whole text: a JSON array (`[` then `{` or `]`),
after the environment's `/proc` copies and pip's JSON and the Flight Recorder's JSON."""

from __future__ import annotations

import re

from reporter.evidence import pyspy
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.evidence.kinds.sniffing import SNIFF_CHARS
from reporter.model import EvidenceKind

_JSON_RE = re.compile(r"\A\ufeff?\s*\[\s*[{\]]")


def looks_like(text: str) -> bool:
    """The text starts with a JSON array of objects (or an empty one)."""
    return _JSON_RE.match(text, 0, SNIFF_CHARS) is not None


ENTRY = KindEntry(
    kind=EvidenceKind.PYSPY_JSON,
    parse=lambda text, read: pyspy.parse_json(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.PYSPY_JSON, SniffStep.WHOLE, looks_like),),
)
