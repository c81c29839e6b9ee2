"""`sha256sum` output of a deployed source tree."""

from __future__ import annotations

from reporter.evidence._text import Unrecognised, clean_lines
from reporter.evidence.env.grammar import SHA_LINE_RE
from reporter.model import Environment, FileHash, Location, ParseResult


def parse_source_hashes(text: str, *, source: str) -> ParseResult:
    """`sha256sum` output (`<64 hex>  path`, or ` *path` for binary mode) of deployed files."""
    hashes: list[FileHash] = []
    odd = Unrecognised(source, "a `sha256sum` line")
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = SHA_LINE_RE.match(line)
        if match is None:
            odd.add(number, raw)
            continue
        path = match.group(2).strip()
        hashes.append(
            FileHash(
                path=path.removeprefix("./"),
                sha256=match.group(1).lower(),
                source=Location(path=source, line=number),
            )
        )
    odd.flush()
    return ParseResult(
        environment=Environment(file_hashes=tuple(hashes)), warnings=tuple(odd.warnings)
    )
