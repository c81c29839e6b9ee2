"""`report watch --json`: one `WatchEvent` per line on stdout.

Every event has `event`, `at` and `text` (the line the terminal shows); the other keys
belong to some kinds of event only and are left out of the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from reporter.console.jsontext import json_value
from reporter.model.document import ABSENT, Count, document, spec

if TYPE_CHECKING:
    from reporter.app.watch import Event

EventKind = Literal[
    "start",
    "decision",
    "health",
    "targets",
    "read-error",
    "cooldown",
    "capture",
    "capture-failed",
    "report",
    "seen-again",
    "dropped",
    "hand-off",
    "stop",
]


@document
class WatchEvent:
    """One thing `report watch` saw or did (one JSON object per line)."""

    event: EventKind = spec(
        "start; decision (a metrics source changed state, and every stalling or wedged "
        "poll); health; targets (found, or changed: a restart); read-error; cooldown (wedged "
        "but not captured); capture; capture-failed; report (drafted) or seen-again (added "
        "to the open report of the same signature); dropped (disk budget); hand-off "
        "(--on-capture); stop"
    )
    at: str = spec("when (ISO 8601, UTC); for a decision, the poll's time")
    text: str = spec("the line the terminal shows, with the numbers behind a decision")
    source: str = spec("decision: the metrics URL", default=ABSENT)
    state: Literal["wedged", "stalling", "working", "quiet", "no-data"] = spec(
        "decision: wedged (zero output with work waiting for at least the window), "
        "stalling (for less), working, quiet (nothing waits: never a wedge), no-data",
        default=ABSENT,
    )
    onset: str | None = spec(
        "decision: when output stopped (the first sample of the stretch)", default=ABSENT
    )
    stalled_for: float = spec("decision: seconds of zero output with work waiting", default=ABSENT)
    window: float = spec("decision: --for, in seconds", default=ABSENT)
    output: float | None = spec("decision: summed output rate at the last sample", default=ABSENT)
    waiting: float | None = spec(
        "decision: summed running and queued requests at the last sample", default=ABSENT
    )
    signals: Mapping[str, float] = spec(
        "decision: each deciding signal and its value at the last sample", default=ABSENT
    )
    samples: Count = spec("decision: samples in the ring", default=ABSENT)
    pids: tuple[int, ...] = spec("targets: the PIDs found now", default=ABSENT)
    trigger: Literal["metrics", "health"] = spec("capture: what triggered it", default=ABSENT)
    bundle: str = spec("capture, report, seen-again: the capture folder", default=ABSENT)
    report: str = spec("report, seen-again: the report file", default=ABSENT)
    headline: str = spec("report, seen-again: the report's title", default=ABSENT)
    signature: str = spec("report, seen-again: the hang signature", default=ABSENT)
    verdict: str = spec("report, seen-again: the verdict", default=ABSENT)
    collect: str = spec("report, seen-again: the collection's status", default=ABSENT)
    argv: tuple[str, ...] = spec("hand-off: the command run", default=ABSENT)
    exit: int | None = spec("hand-off: its exit code (null: killed or not run)", default=ABSENT)
    timed_out: bool = spec("hand-off: killed at --on-capture-timeout", default=ABSENT)
    stdout: str = spec("hand-off: the end of its output", default=ABSENT)
    stderr: str = spec("hand-off: the end of its errors", default=ABSENT)
    metrics_urls: tuple[str, ...] = spec("start: the metrics URLs", default=ABSENT)
    health_url: str | None = spec("start: the health route", default=ABSENT)
    every: float = spec("start: seconds between polls", default=ABSENT)
    for_: float = spec("start: --for, in seconds", name="for", default=ABSENT)
    cooldown: float = spec("start: --cooldown, in seconds", default=ABSENT)
    out_dir: str = spec("start: --out-dir", default=ABSENT)
    reports: str = spec("start: --reports", default=ABSENT)


def event_document(event: Event) -> WatchEvent:
    """The document of one event (its fields by name; `for` is `for_`)."""
    fields: dict[str, Any] = {
        ("for_" if key == "for" else key): value for key, value in event.fields.items()
    }
    for key in ("pids", "argv", "metrics_urls"):
        if key in fields:
            fields[key] = tuple(fields[key])
    return WatchEvent(event=event.kind, at=event.at_text, text=event.text, **fields)  # type: ignore[arg-type]


def line(doc: WatchEvent) -> str:
    """The document as one JSON line (masked by `jsontext.json_value`, as every --json output)."""
    return json.dumps(json_value(doc), ensure_ascii=False) + "\n"
