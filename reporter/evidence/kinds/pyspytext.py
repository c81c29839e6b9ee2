"""The entry of py-spy's text dumps (kind `pyspy-text`); the parser is `reporter.evidence.pyspy`.

Sniffed by its markers (`Process N:` with a `Python v` line after it, `Thread N (idle)`,
the condensed `Thread (idle) "MainThread"`, SGLang's `Pyspy dump` line or its `Pyspy failed`
/ `All pyspy dump attempts failed`), raced against faulthandler's: the one seen first wins,
py-spy on a tie. Then as a fragment: two or more indented `name (file:line)` lines making
up two thirds of the head. Last, py-spy's error text alone (`Error: ...`, `Permission
Denied`, a Rust panic): a failed dump is still py-spy evidence. Its failures (what py-spy
said instead of a dump) are its own field.
"""

from __future__ import annotations

import re

from reporter.evidence import pyspy
from reporter.evidence.kinds.interface import (
    FieldMerge,
    KindEntry,
    SniffStep,
    dated_on_host,
    sniffed,
)
from reporter.evidence.kinds.sniffing import Marker, earliest, mostly
from reporter.model import EvidenceKind

_CONDENSED_RE = re.compile(r"\(Python v?\d[\w.+-]{0,30}\)\r?$")


def _python_follows(head: str, at: int) -> bool:
    """`Process N:` is only py-spy's when a `Python v` line follows (or, condensed, ends it)."""
    end = head.find("\n", at)
    line = head[at : end if end >= 0 else len(head)]
    return head.find("Python v", at) >= 0 or _CONDENSED_RE.search(line) is not None


MARKERS: tuple[Marker, ...] = (
    Marker("Process ", re.compile(r"Process \d+: "), _python_follows),
    Marker(
        "Thread ",
        re.compile(
            r'Thread (?:\d+|0x[0-9A-F]+)(?: \((?:idle|active|active\+gil|gil)\))?(?:: ".*")?\r?$'
        ),
    ),
    # The condensed form: `Thread (idle) "MainThread"`, no id.
    Marker("Thread (", re.compile(r'Thread \((?:idle|active|active\+gil|gil)\):? "[^\n]*"\r?$')),
    Marker("Pyspy dump", re.compile(r"Pyspy dump (?:for )?PID \d")),
    # SGLang's watchdog when py-spy failed: a failed dump is still py-spy evidence.
    Marker("Pyspy failed ", re.compile(r"Pyspy failed (?:\([^()\n]*--pid \d|to dump PID \d)")),
    Marker("All pyspy dump", re.compile(r"All pyspy dump attempts failed for PID \d")),
)
ERROR_MARKERS: tuple[Marker, ...] = (
    Marker("Error: ", re.compile(r"Error: ")),
    Marker("Permission Denied", re.compile(r"Permission Denied")),
    Marker("thread '", re.compile(r"thread '[^'\n]*' panicked at")),
)


def frames_only(head: str) -> bool:
    """A fragment of py-spy frames with no `Thread` line: two or more frame lines, most lines."""
    return mostly(head, lambda line: pyspy.looks_like_frame(line.rstrip("\r")))


def error_only(head: str) -> bool:
    """py-spy's own error text, with no dump."""
    return earliest(head, ERROR_MARKERS) >= 0


ENTRY = KindEntry(
    kind=EvidenceKind.PYSPY_TEXT,
    parse=lambda text, read: pyspy.parse_text(text, source=read.source),
    markers=MARKERS,
    sniffs=(
        sniffed(EvidenceKind.PYSPY_TEXT, SniffStep.FRAGMENT, frames_only),
        sniffed(EvidenceKind.PYSPY_TEXT, SniffStep.LAST, error_only),
    ),
    merges=(FieldMerge("failures", stamp=dated_on_host),),
    forget=pyspy.forget,
)
