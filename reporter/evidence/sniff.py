"""Decide what kind of evidence a text holds, and parse it with the matching parser.

`sniff(text)` looks only at the first 64 KiB, so it stays cheap on huge files. The kinds
say how they are told (their registry entries, `reporter.evidence.kinds`); this module
asks them in a fixed order, and the first that names a kind wins:

* a file starting `# report-proc:` (`report collect`'s per-round `/proc` files) skips
  the `WHOLE` step and is judged on its first 4 KiB as it is;
* the `WHOLE` step, on the text itself: a NUL-separated `/proc` copy or pip's JSON (an
  environment file), a Flight Recorder JSON dump, a JSON array (py-spy's `--json`);
* then on the head (4 KiB, else 64 KiB; ANSI codes removed): `FIRST` (the `/proc` round
  files' header, which decides whatever the body quotes), then the markers' race: py-spy's
  lines against faulthandler's, the one seen first wins (py-spy on a tie);
* then the other steps of `SniffStep`, each asking the kinds in `REGISTRY` order:
  `FRAGMENT` (py-spy or faulthandler frames
  that lost their headers), `DISTINCTIVE` (an excerpt, goroutines, a `/proc` status copy,
  check_env / collect_env / nvidia-smi), `STRUCTURED` (a Prometheus JSON answer,
  `systemctl show`, exposition comments, a Grafana CSV), `SHAPE` (exposition samples,
  timestamped lines), `GENERIC` (sha256sum, pip freeze, KEY=VALUE, a command line) and
  `LAST` (py-spy's error text alone);
* nothing known → UNKNOWN.

Log prefixes in front of these lines do not matter: a marker counts at the start of a
line or after a space, `|` or `]`.
"""

from __future__ import annotations

from datetime import datetime

from reporter.evidence import kinds, prochead
from reporter.evidence._text import strip_ansi
from reporter.evidence.kinds.interface import Detect, Parser, Read, SniffStep
from reporter.evidence.kinds.sniffing import QUICK_CHARS, SNIFF_CHARS, earliest
from reporter.model import EvidenceKind, ParseResult

__all__ = ["PARSERS", "SNIFF_CHARS", "parse", "sniff"]

# The detectors on the whole text, then those on the head after the markers' race.
_WHOLE: tuple[Detect, ...] = kinds.detectors(SniffStep.WHOLE)
# A first line no other kind has decides before the race: a `/proc` round file whose body
# quotes a py-spy or faulthandler line (a thread's name, a command line) stays what its
# header says.
_HEADERS: tuple[Detect, ...] = kinds.detectors(SniffStep.FIRST)
_MARKERS = kinds.markers()
_DETECTORS: tuple[Detect, ...] = tuple(
    detect
    for step in SniffStep
    if step not in (SniffStep.WHOLE, SniffStep.FIRST)
    for detect in kinds.detectors(step)
)


def sniff(text: str) -> EvidenceKind:
    """The kind of evidence in `text`, judged from its first 64 KiB."""
    quick = text[:QUICK_CHARS]
    if quick.lstrip("\ufeff").startswith(prochead.MARKER):
        # `report collect`'s per-round /proc files name their kind on their first line.
        return _sniff_head(quick)
    for detect in _WHOLE:
        kind = detect(text)
        if kind is not None:
            return kind
    # Nearly every file shows its kind in the first lines; the earliest marker of a
    # prefix is also the earliest of the whole head, so a decision there is final.
    kind = _sniff_head(strip_ansi(quick))
    if kind is EvidenceKind.UNKNOWN and len(text) > QUICK_CHARS:
        kind = _sniff_head(strip_ansi(text[:SNIFF_CHARS]))
    return kind


def _sniff_head(head: str) -> EvidenceKind:
    """`sniff` on an already cut and cleaned head."""
    for detect in _HEADERS:
        found = detect(head)
        if found is not None:
            return found
    best = -1
    winner = None
    for kind, markers in _MARKERS:
        # Only a marker up to the best so far can change the answer; a tie keeps it.
        at = earliest(head, markers, best if best >= 0 else len(head))
        if at >= 0 and (best < 0 or at < best):
            best, winner = at, kind
        if best == 0:
            break  # a marker on the first line: no other kind's can come earlier, a tie keeps it
    if winner is not None:
        return winner
    for detect in _DETECTORS:
        found = detect(head)
        if found is not None:
            return found
    return EvidenceKind.UNKNOWN


def parse(
    kind: EvidenceKind, text: str, *, source: str, captured_at: datetime | None = None
) -> ParseResult:
    """Parse `text` with the parser of `kind` (its registry entry); UNKNOWN gives a warning only.

    `captured_at` (the manifest's, else the bundle's earliest) dates a single
    Prometheus scrape without timestamps, and gives year-less log times their year.
    """
    return PARSERS[kind](text, Read(source=source, captured_at=captured_at))


# The parser of every evidence kind, from its registry entry (`reporter.evidence.kinds`).
PARSERS: dict[EvidenceKind, Parser] = {entry.kind: entry.parse for entry in kinds.REGISTRY}
