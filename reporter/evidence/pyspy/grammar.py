"""The line grammar of `py-spy dump` text (docs/formats.md 1.2, 1.7): what each line is.

Regular expressions for the structural lines (process and thread headers, separators,
SGLang's and `ray stack`'s wrapper lines) and the small predicates the text parser and
the error reader share. Numbers are bounded so int() never sees a huge literal.
"""

from __future__ import annotations

import re

from reporter.model import ThreadStatus

PROCESS_RE = re.compile(r"Process (\d{1,18}): ?(.*)\Z")
PARENT_RE = re.compile(r"Parent Process (\d{1,18}): ?(.*)\Z")
# The id is optional: condensed and hand-edited dumps print `Thread (idle) "MainThread"`.
THREAD_RE = re.compile(
    r'Thread(?: (0x[0-9A-Fa-f]{1,32}|\d{1,18}))?(?: \(([a-z+]+)\))?(?::? "(.*)")?\Z'
)
# `Process 7985: sglang::scheduler_TP0   (Python 3.12.3)`: title and version on one line.
# Matched at the last `(Python ` of the line (`condensed_header`), never searched from the
# start: a lazy `(.*?)\s+\(Python...` retried its tail at every character of a long title.
CONDENSED_RE = re.compile(r"\(Python v?(\d[\w.+-]{0,30})\)\Z")


def condensed_header(title: str) -> tuple[str, str] | None:
    """(title, version) of a condensed header's text (`sglang::scheduler_TP0   (Python
    3.12.3)`), or None when it does not end so."""
    at = title.rfind("(Python ")
    if at <= 0 or not title[at - 1].isspace():
        return None
    found = CONDENSED_RE.match(title, at)
    if found is None:
        return None
    return title[:at].rstrip(), found.group(1)


# `ray stack`: `Stack dump for USER  PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND`
# (a `ps aux` row) before each process's py-spy output.
RAY_STACK_RE = re.compile(r"Stack dump for \S+\s+(\d{1,18})\s()")
# Two frame lines glued into one (a paste that lost a newline).
GLUE_SPLIT_RE = re.compile(r"(?<=\)) {2,}(?=\S)")
# A thread line cut short (`Thread 8157 (idle): "Thread-1 (lock_wa`): keep the id and what follows.
THREAD_CUT_RE = re.compile(
    r"Thread (0x[0-9A-Fa-f]{1,32}|\d{1,18})(?: \(([a-z+]*)\)?)?(?:: \"?(.*))?\Z"
)
SIGNAL_RE = re.compile(r"Signal (\d{1,4}): (.*)\Z")
WRAPPER_RE = re.compile(r"Pyspy dump (?:for )?PID (\d{1,18})\b:?(.*)\Z")
PANIC_RE = re.compile(r"thread '[^']*' panicked at")
# Where py-spy text starts inside a prefixed line; the text before it is the prefix.
# No `.*` here: a search tries every position, and a long junk line must stay linear.
ANCHOR_RE = re.compile(
    r"Process \d{1,18}: |Python v\d"
    r'|Thread (?:0x[0-9A-Fa-f]+|\d+)(?: \([a-z+]+\)|: "|\Z)'
    r'|Thread \([a-z+]+\):? "'
    r"|Pyspy dump (?:for )?PID \d"
)
ERROR_ANCHOR_RE = re.compile(r"Error: |Permission Denied")

STATUS = {
    "idle": ThreadStatus.IDLE,
    "active": ThreadStatus.ACTIVE,
    "active+gil": ThreadStatus.ACTIVE_GIL,
    "gil": ThreadStatus.GIL,
}
SEPARATOR_MIN = 20

# Thread id for thread lines that print none (`Thread (idle) "MainThread"`) and fragments.
UNKNOWN_THREAD_ID = "?"

_DIGITS = re.compile(r"\d+")


def is_separator(line: str) -> bool:
    """A dash line between `--subprocesses` blocks."""
    return len(line) >= SEPARATOR_MIN and not line.strip("-")


def thread_match(line: str) -> re.Match[str] | None:
    """`THREAD_RE` with an id or a status at least (a bare `Thread` is not a thread line)."""
    match = THREAD_RE.match(line)
    if match is None or (match.group(1) is None and match.group(2) is None):
        return None
    return match


def same_role(first: str | None, second: str | None) -> bool:
    """Two thread names that differ at most in numbers (`worker-0`, `worker-1`)."""
    if not first or not second:
        return False
    return first == second or _DIGITS.sub("#", first) == _DIGITS.sub("#", second)


def ends_header(line: str) -> bool:
    """Lines that cannot continue a cmdline: the next structure of the output."""
    if not line:
        return False
    first = line[0]
    if first == "P":
        return line.startswith(("Process ", "Parent Process ", "Pyspy dump", "Permission Denied"))
    if first == "T":
        return thread_match(line) is not None
    if first == "-":
        return is_separator(line)
    if first == "E":
        return line.startswith("Error: ")
    return "Pyspy dump" in line and WRAPPER_RE.search(line) is not None


def structural(line: str) -> bool:
    """Lines that start py-spy structure again after an error."""
    return ends_header(line) or line.startswith(("Thread ", "Signal ", "Python v"))
