"""The `report collect` use case."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from reporter.collect import collect as run_collect
from reporter.collect.state import utc_now

if TYPE_CHECKING:
    from reporter.collect import CollectRequest, CollectSummary


# --- report collect --------------------------------------------------------------------


def collect(
    request: CollectRequest,
    *,
    progress: Callable[[str], None],
    tick: Callable[[str, int, int], None] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> CollectSummary:
    """`report collect`: gather live evidence into a new bundle folder.

    The first Ctrl-C stops the collection within a second: open HTTP reads are cut
    (`collect.httpread`), running helpers killed, and a valid partial bundle is left; a
    second one interrupts at once (the manifest written after the last step still stands).
    SIGTERM and SIGHUP do what Ctrl-C does. `clock` stamps the manifest (by
    default the wall clock: collection times are facts, `SOURCE_DATE_EPOCH` does not apply).
    """
    import signal
    import threading

    clock = clock or utc_now

    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return run_collect(request, progress=progress, stop=stop, tick=tick, clock=clock)

    def first_interrupt(signum: int, frame: object) -> None:
        stop.set()
        progress(
            "stopping: open reads and helpers end now, what was captured is kept "
            "(Ctrl-C again to abort at once)"
        )
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def terminated(signum: int, frame: object) -> None:
        # SIGTERM (systemd, `timeout`, a batch scheduler) and SIGHUP (the terminal went
        # away) end the run as the first Ctrl-C does: helpers and engine processes (ssh,
        # kubectl, srun) killed, bundle.toml left `interrupted` and readable; a second one
        # ends it at once.
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        progress(
            f"stopping on {signal.Signals(signum).name}: helpers end now, what was captured is kept"
        )

    previous = signal.signal(signal.SIGINT, first_interrupt)
    others = {sig: signal.signal(sig, terminated) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return run_collect(request, progress=progress, stop=stop, tick=tick, clock=clock)
    finally:
        signal.signal(signal.SIGINT, previous)
        for sig, handler in others.items():
            signal.signal(sig, handler)
