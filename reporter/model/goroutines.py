"""Go goroutine dumps of client processes (traceback, SIGQUIT, panic, pprof debug=1)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reporter.model.evidence import Location


class GoDumpForm(StrEnum):
    """Which Go runtime output a goroutine dump came from."""

    TRACEBACK = "traceback"
    """`runtime.Stack(buf, true)` or `/debug/pprof/goroutine?debug=2`."""
    SIGQUIT = "sigquit"
    PANIC = "panic"
    FATAL = "fatal"
    AGGREGATED = "aggregated"
    """`/debug/pprof/goroutine?debug=1`: one stanza per distinct stack, with a count."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GoFrame:
    """One Go frame: `net/http.(*persistConn).roundTrip(0xc000..., ...)` at `file:line`.

    `args` is the text between the parentheses as printed (`...` for inlined calls,
    "" when the form prints none, as `created by` lines and debug=1 stanzas do).
    """

    function: str
    args: str = ""
    file: str = ""
    line: int | None = None

    @property
    def package(self) -> str:
        """The import path: `net/http.(*persistConn).roundTrip` -> `net/http`."""
        slash = self.function.rfind("/")
        dot = self.function.find(".", slash + 1)
        return self.function[:dot] if dot > 0 else self.function


@dataclass(frozen=True, slots=True, kw_only=True)
class Goroutine:
    """One goroutine (or, from debug=1, `count` goroutines with one stack and no id).

    `state` is the wait reason in brackets (`select`, `IO wait`, `chan receive`);
    `wait_minutes` is None when Go printed no duration (under a minute, or not yet
    seen blocked by two GC cycles). `frames` are innermost first.
    """

    id: int | None
    state: str = ""
    wait_minutes: int | None = None
    locked_to_thread: bool = False
    frames: tuple[GoFrame, ...] = ()
    created_by: GoFrame | None = None
    parent_id: int | None = None
    elided: bool = False
    count: int = 1
    labels: tuple[tuple[str, str], ...] = ()
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class GoroutineDump:
    """All goroutines of one dump of one Go process, in the order printed."""

    form: GoDumpForm
    goroutines: tuple[Goroutine, ...] = ()
    headline: str = ""
    captured_at: datetime | None = None
    source: Location
