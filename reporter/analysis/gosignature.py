"""What a Go dump adds to a signature: where its goroutines wait, never the dump's format.

Input: the bundle's `GoroutineAnalysis`. Output: one line per place goroutines wait, sorted, at
most `MOST`: the client-wait buckets when there are any (`go wait:
net/http.(*persistConn).roundTrip`), else the largest non-runtime buckets (`go wait:
main.worker`). Wait states (a `debug=1` dump has none), counts, wait minutes, goroutine ids
and addresses are left out: they change between captures of one hang. Two dumps of the same program stuck the same way share
these lines whatever form they were taken in (`debug=1`, `debug=2`, SIGQUIT); dumps of
different programs do not.
"""

from __future__ import annotations

from reporter.analysis.result import GoBucket, GoroutineAnalysis

MOST = 5


def go_wait_lines(goroutines: GoroutineAnalysis | None) -> tuple[str, ...]:
    """The signature lines of the Go dumps (see the module docstring); () without any."""
    if goroutines is None or not goroutines.dumps:
        return ()
    buckets: list[GoBucket] = list(goroutines.waiting)
    if not buckets:
        buckets = [b for dump in goroutines.dumps for b in dump.buckets if not b.runtime]
        buckets.sort(key=lambda b: -b.count)
    lines = {_line(b) for b in buckets if b.top is not None}
    return tuple(sorted(lines)[:MOST])


def _line(bucket: GoBucket) -> str:
    # The wait state (`select`) is left out: a `debug=1` dump does not print it.
    assert bucket.top is not None
    return f"go wait: {bucket.top.function}"
