"""Use cases behind the CLI, one module per family of commands.

Each function takes paths, options and settings, calls the loader, analysis, renderer or
upstream clients, and returns a result object; printing is the CLI's job.
"""

from __future__ import annotations

from reporter.app.collect import *  # noqa: F403
from reporter.app.report import *  # noqa: F403
from reporter.app.settings import *  # noqa: F403
from reporter.app.upstream import *  # noqa: F403
