"""Ctrl-C while the command line is still loading: exit 130 quietly (issue 16).

Installed by `reporter.cli` before typer and the app layer are imported; the `report`
group puts Python's own handler back once its handlers that map KeyboardInterrupt to
130 are in place. No typer here: this must load first.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def quiet_interrupt(_signum: int, _frame: object) -> None:  # pragma: no cover - timing
    """Say `interrupted` and exit 130 at once, without a traceback."""
    os.write(2, b"interrupted\n")
    os._exit(130)


def install() -> None:
    """Use `quiet_interrupt` while the imports load, for the `report` program only
    (not when a test or another program imports the package)."""
    if Path(sys.argv[0]).name in ("report", "__main__.py"):
        signal.signal(signal.SIGINT, quiet_interrupt)


def restore() -> None:
    """Python's KeyboardInterrupt again, once the group maps it to exit 130."""
    if signal.getsignal(signal.SIGINT) is quiet_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)
