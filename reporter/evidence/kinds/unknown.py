"""The entry of a file no kind claims (kind `unknown`): parsed to one warning, never sniffed
(sniffing names it when nothing else matched)."""

from __future__ import annotations

from reporter.evidence._text import warning_at
from reporter.evidence.kinds.interface import KindEntry, Read
from reporter.model import EvidenceKind, ParseResult


def _parse(text: str, read: Read) -> ParseResult:
    warning = warning_at(
        read.source, 0, "not recognised as a py-spy dump (text or --json) or a faulthandler dump"
    )
    return ParseResult(warnings=(warning,))


ENTRY = KindEntry(kind=EvidenceKind.UNKNOWN, parse=_parse)
