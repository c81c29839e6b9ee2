"""Parse explicit code excerpt files: source lines an operator saved from the deployed service.

Input: the file's text and the name to cite. Output: `ParseResult.excerpts`. The
format is a small header, a `---` line, then the code exactly as deployed::

    reporter-excerpt: 1
    path: python/sglang/srt/managers/scheduler.py   # repository-relative where known
    lines: 1012-1031                                # first-last; absent: a whole file from 1
    highlight: 1019, 1024-1025                      # optional, absolute line numbers
    repo: sgl-project/sglang                        # optional, for the permalink
    ref: v0.5.2                                     # optional tag or commit
    sha256: 3b1f...                                 # optional, sha256 of the whole deployed file
    note: where ranks 0-1 enter the all_reduce      # optional
    ---
        def check_hicache_events(self):
    ...

Another `reporter-excerpt: 1` line starts the next excerpt of the same file.
Unknown keys, a line count that disagrees with `lines`, and highlights outside
the range become warnings; an excerpt without `path` or without `---` is
dropped with a warning. `sniff(text)` is True when the first line is the marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reporter.evidence._text import clean_lines, excerpt, warning_at
from reporter.evidence.kinds.interface import (
    FieldMerge,
    KindEntry,
    SniffStep,
    sniffed,
)
from reporter.model import CodeExcerpt, EvidenceKind, Location, ParseResult, ParseWarning

MARKER = "reporter-excerpt: 1"
_KEYS = frozenset(("path", "lines", "highlight", "repo", "ref", "sha256", "note"))
_RANGE_RE = re.compile(r"\s*+(\d++)\s*+(?:-\s*+(\d++))?\s*+\Z")
_REPO_RE = re.compile(r"[\w.-]+/[\w.-]+\Z")
_SHA_RE = re.compile(r"[0-9a-fA-F]{64}\Z")


def sniff(text: str) -> bool:
    """True when `text` is an excerpt file (its first non-blank line is the marker)."""
    for line in text.lstrip("\ufeff").splitlines():
        if line.strip():
            return line.strip() == MARKER
    return False


@dataclass(slots=True)
class _Block:
    start_line: int
    header: dict[str, tuple[str, int]] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)
    in_body: bool = False


def parse(text: str, *, source: str) -> ParseResult:
    """Every excerpt in `text`, with a warning for each problem found."""
    warnings: list[ParseWarning] = []
    blocks: list[_Block] = []
    current: _Block | None = None
    for number, raw in enumerate(clean_lines(text), start=1):
        if raw.strip() == MARKER and (current is None or current.in_body or not current.header):
            current = _Block(start_line=number)
            blocks.append(current)
            continue
        if current is None:
            if raw.strip():
                warnings.append(
                    warning_at(source, number, f"text before `{MARKER}`: {excerpt(raw)}")
                )
            continue
        if current.in_body:
            current.body.append(raw)
            continue
        if raw.strip() == "---":
            current.in_body = True
            continue
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        key, sep, value = raw.partition(":")
        key = key.strip().lower()
        if not sep or key not in _KEYS:
            warnings.append(warning_at(source, number, f"unknown header line: {excerpt(raw)}"))
            continue
        # A trailing ` # comment` is allowed, except in the free-text note.
        value = (value if key == "note" else value.split(" #", 1)[0]).strip()
        current.header[key] = (value, number)
    excerpts: list[CodeExcerpt] = []
    for block in blocks:
        built = _build(block, source, warnings)
        if built is not None:
            excerpts.append(built)
    warnings.sort(key=lambda w: (w.source.line, w.message))
    return ParseResult(excerpts=tuple(excerpts), warnings=tuple(warnings))


def _build(block: _Block, source: str, warnings: list[ParseWarning]) -> CodeExcerpt | None:
    header = block.header
    if "path" not in header or not header["path"][0]:
        warnings.append(warning_at(source, block.start_line, "excerpt without `path:`; skipped"))
        return None
    if not block.in_body:
        warnings.append(
            warning_at(
                source, block.start_line, "excerpt without a `---` line before the code; skipped"
            )
        )
        return None
    body = list(block.body)
    # The blank line that separates two excerpts is not code.
    while body and not body[-1].strip():
        body.pop()
    start = 1
    if "lines" in header:
        value, line = header["lines"]
        match = _RANGE_RE.match(value)
        if match is None:
            warnings.append(
                warning_at(source, line, f"`lines: {value}` is not N or N-M; starts at 1")
            )
        else:
            start = int(match.group(1))
            end = int(match.group(2) or match.group(1))
            if end < start:
                warnings.append(warning_at(source, line, f"`lines: {value}` ends before it starts"))
            elif end - start + 1 != len(body):
                warnings.append(
                    warning_at(
                        source,
                        line,
                        f"`lines: {value}` names {end - start + 1} lines but {len(body)} follow; "
                        f"numbered from {start}",
                    )
                )
    end_line = start + max(len(body), 1) - 1
    highlight: list[int] = []
    if "highlight" in header:
        value, line = header["highlight"]
        for part in (p for p in value.split(",") if p.strip()):
            match = _RANGE_RE.match(part)
            if match is None:
                warnings.append(
                    warning_at(source, line, f"highlight {part.strip()!r} is not N or N-M")
                )
                continue
            low, high = int(match.group(1)), int(match.group(2) or match.group(1))
            outside = [n for n in range(low, high + 1) if not start <= n <= end_line]
            if outside:
                warnings.append(
                    warning_at(
                        source,
                        line,
                        f"highlight {part.strip()} lies outside lines {start}-{end_line}",
                    )
                )
            highlight.extend(n for n in range(low, high + 1) if start <= n <= end_line)
    repo = header.get("repo", ("", 0))
    if repo[0] and not _REPO_RE.match(repo[0]):
        warnings.append(warning_at(source, repo[1], f"repo {repo[0]!r} is not owner/name; ignored"))
        repo = ("", 0)
    sha = header.get("sha256", ("", 0))
    if sha[0] and not _SHA_RE.match(sha[0]):
        warnings.append(warning_at(source, sha[1], "sha256 is not 64 hex digits; ignored"))
        sha = ("", 0)
    return CodeExcerpt(
        path=header["path"][0].removeprefix("./"),
        start=start,
        lines=tuple(body),
        highlight=tuple(sorted(set(highlight))),
        repo=repo[0],
        ref=header.get("ref", ("", 0))[0],
        file_sha256=sha[0].lower(),
        note=header.get("note", ("", 0))[0],
        source=Location(path=source, line=block.start_line),
    )


# Explicit code excerpt files, in file order.
ENTRY = KindEntry(
    kind=EvidenceKind.CODE_EXCERPT,
    parse=lambda text, read: parse(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.CODE_EXCERPT, SniffStep.DISTINCTIVE, sniff),),
    merges=(FieldMerge("excerpts"),),
    shown="under Code at the branch point",
)
