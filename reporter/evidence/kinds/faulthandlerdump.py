"""The entry of Python's faulthandler dumps (kind `faulthandler`); the parser is
`reporter.evidence.faulthandler`.

Sniffed by its markers (`Thread 0x... (most recent call first):`, `Stack (most recent call
first):`, `Fatal Python error:`, `Timeout (0:00:01)!`, `  File "...", line N in f`), raced
against py-spy's (py-spy's entry comes first in `REGISTRY`, so it wins a tie); then as a
fragment: `File "f.py", line N in f` lines at any indent making up most of the head.
"""

from __future__ import annotations

import re

from reporter.evidence import faulthandler
from reporter.evidence.kinds.interface import KindEntry, SniffStep, sniffed
from reporter.evidence.kinds.sniffing import Marker, mostly
from reporter.model import EvidenceKind

MARKERS: tuple[Marker, ...] = (
    Marker("Thread 0x", re.compile(r"Thread 0x[0-9a-fA-F]+ \(most recent call first\):")),
    Marker(
        "Current thread 0x",
        re.compile(r"Current thread 0x[0-9a-fA-F]+ \(most recent call first\):"),
    ),
    Marker("Stack (", re.compile(r"Stack \(most recent call first\):")),
    Marker("Fatal Python error: ", re.compile(r"Fatal Python error: ")),
    Marker("Timeout (", re.compile(r"Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!")),
    Marker('  File "', re.compile(r'  File "[^\n]{0,600}?", line (?:\d+|\?\?\?) in ')),
)
_FRAME_RE = re.compile(r'File "[^"\n]{1,600}", line (?:\d+|\?\?\?) in \S')


def frames_only(head: str) -> bool:
    """faulthandler `File` lines that lost their indentation, making up most lines."""
    return mostly(head, lambda line: _FRAME_RE.match(line.strip()) is not None)


ENTRY = KindEntry(
    kind=EvidenceKind.FAULTHANDLER,
    parse=lambda text, read: faulthandler.parse(text, source=read.source),
    markers=MARKERS,
    sniffs=(sniffed(EvidenceKind.FAULTHANDLER, SniffStep.FRAGMENT, frames_only),),
    forget=faulthandler.forget,
)
