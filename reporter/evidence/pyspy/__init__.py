"""Parse `py-spy dump` output (text and `--json`, py-spy 0.4.x) into `ParseResult`s.

Inputs are the file's text and the name to cite in warnings; nothing here reads
files. Text output, by example (docs/formats.md 1.2)::

    Process 7985: sglang::scheduler_TP0
    Python v3.11.7 (/usr/local/bin/python3.11)

    Thread 7985 (idle): "MainThread"
        Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)
    Thread 8039 (active+gil): "watchdog"
        ...

gives one `ProcessDump(pid=7985, cmdline="sglang::scheduler_TP0", ...)`. The text
parser also accepts what real captures wrap around that: ANSI colours and CRLF,
per-line log prefixes (`sglang-1  | `, `[2026-07-14 08:34:44 TP6] `), SGLang's
`Pyspy dump PID 187: rc=0 timeout=False truncated=True` lines (capture time,
tag and PID for the dump after them), several dumps per file, `--subprocesses`
trees (including py-spy 0.4.1's repeated children, merged by PID), `--locals`,
`--native`, `--core` headers, truncated output, and py-spy's own error text,
which becomes a `FailedDump` rather than an exception. Whatever is not
understood becomes a `ParseWarning` with file:line and parsing goes on.

Thread order: every `ProcessDump` lists threads oldest first (normally the main
thread first). That is the order py-spy's text prints; `--json` prints newest
first, so `parse_json` reverses it.

Modules: `plain` (the usual dump file, read without the state machine), `text` (the
state machine, for everything else), `grammar` (what each line is), `frames` (frame
lines), `blocks` (what the parser fills, and freezing it), `subprocesses` (py-spy
<= 0.4.1's repeated children), `failures` (error text and the one failure
classifier), `jsonform` (`--json`).
"""

from reporter.evidence.pyspy.failures import classify_failure, failure_state
from reporter.evidence.pyspy.frames import looks_like_frame
from reporter.evidence.pyspy.grammar import UNKNOWN_THREAD_ID
from reporter.evidence.pyspy.jsonform import parse_json
from reporter.evidence.pyspy.text import forget, parse_text

__all__ = [
    "UNKNOWN_THREAD_ID",
    "classify_failure",
    "failure_state",
    "forget",
    "looks_like_frame",
    "parse_json",
    "parse_text",
]
