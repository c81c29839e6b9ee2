"""Pause CPython's cyclic garbage collector around bulk parsing and analysis.

Loading and analysing a large bundle builds millions of small objects that form
no reference cycles. Each full collection would walk all of them again and free
nothing (about half the parse time of a 30 MB dump, and spikes of 0.5 s in the
analysis), so the hot paths run with the collector paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(pause: bool = True) -> Iterator[None]:
    """Pause CPython's cyclic garbage collector inside the block when `pause` is true.

    A parse builds hundreds of thousands of small objects that never form cycles;
    the collector would walk the growing result again and again (close to half
    the parse time of a 30 MB file) and free nothing. The parsers pause it for
    texts of `GC_PAUSE_MIN_CHARS` and more; a loader reading thousands of small
    files gains more by pausing it once around the whole load. Leaves the
    collector off if the caller had turned it off.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            # What was built meanwhile is long-lived: straight to the oldest generation
            # (both calls move whole lists), or the first collection after the pause
            # walks all of it as young objects (a third of a second at 16,384 ranks).
            # Not when the caller froze objects of its own: unfreeze would release them.
            gc.freeze()
            gc.unfreeze()
        gc.enable()
