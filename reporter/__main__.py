"""`python -m reporter` runs the `report` command line."""

import os
import signal


def _quiet_interrupt(_signum: int, _frame: object) -> None:  # pragma: no cover - timing
    # Ctrl-C before the command line has loaded: exit 130 without a traceback.
    os.write(2, b"interrupted\n")
    os._exit(130)


signal.signal(signal.SIGINT, _quiet_interrupt)

from reporter.cli import main  # noqa: E402 - after the handler, on purpose

main()
