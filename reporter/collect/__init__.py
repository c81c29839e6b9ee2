"""`report collect`: production-safe evidence capture from live processes into a bundle.

Light reads only: `/proc` copies, py-spy dumps (non-blocking unless asked), GET
requests to the metrics and Prometheus URLs the user names, the target
interpreter's package metadata and `systemctl show`. Never a request to the
serving API, never a signal to a target, never a restart.

Modules: `plan` (the request, target selection, schedules and file names; pure),
`procfs` (process discovery from `/proc`), `ptrace` (may py-spy read a process,
and what to do if not), `runner` (bounded helper programs), `dumps` (py-spy),
`scrape` (metrics and query_range over httpx), `envcap` (cmdline, environ,
packages, systemctl), `scrub` (secret redaction at capture), `manifest`
(`bundle.toml`, rewritten atomically after every step) and `session` (the order
of the steps, progress and interruption).
"""

from reporter.collect.manifest import CollectStatus
from reporter.collect.plan import CollectRequest
from reporter.collect.session import CollectSummary, collect

__all__ = ["CollectRequest", "CollectStatus", "CollectSummary", "collect"]
