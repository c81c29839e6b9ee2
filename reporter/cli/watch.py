"""`report watch`: catch the next wedge as it happens, from outside, and report it."""

from __future__ import annotations

import shlex
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reporter.cli.collect import Remote, remote_request
from reporter.cli.group import cli, echo, masked
from reporter.cli.options import JsonFlag, size
from reporter.core.errors import UsageError

if TYPE_CHECKING:
    from reporter.app.watch import Event


@cli.command(
    "watch",
    epilog="Example: report watch --metrics-url http://127.0.0.1:30000/metrics "
    "--match 'sglang::scheduler' --out-dir /var/lib/report/captures --reports "
    "/var/lib/report/reports --on-capture 'notify-oncall {report} {headline}'. "
    "Exit codes: 0 stopped cleanly (SIGTERM, --max-time) or --once captured; 1 a capture "
    "made no report; 2 usage; 3 --once ended before any capture.",
)
def watch_cmd(
    metrics_url: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics-url",
            help="A /metrics URL, or a Prometheus .../api/v1/query_range?query=... URL "
            "(repeatable). GET only.",
        ),
    ] = None,
    health_url: Annotated[
        str | None,
        typer.Option(
            "--health-url",
            help="The health route; probes that hang past --health-timeout for --for are a wedge.",
        ),
    ] = None,
    health_timeout: Annotated[
        str, typer.Option("--health-timeout", help="Deadline of each health probe.")
    ] = "10s",
    pid: Annotated[
        list[int] | None, typer.Option("--pid", help="A process to dump at capture (repeatable).")
    ] = None,
    match: Annotated[
        str | None,
        typer.Option("--match", help="Regex over process titles (looked up again at every poll)."),
    ] = None,
    children_of: Annotated[
        int | None, typer.Option("--children-of", help="Only descendants of this PID.")
    ] = None,
    ssh: Annotated[
        list[str] | None,
        typer.Option("--ssh", help="Capture on [USER@]HOST[:PORT] through OpenSSH (repeatable)."),
    ] = None,
    exec_template: Annotated[
        str | None,
        typer.Option("--exec", help="Capture through a command with {host} (with --host)."),
    ] = None,
    host: Annotated[
        list[str] | None, typer.Option("--host", help="A host name for --exec (repeatable).")
    ] = None,
    unit: Annotated[
        list[str] | None,
        typer.Option("--unit", help="A systemd unit for `systemctl show` at capture (repeatable)."),
    ] = None,
    out_dir: Annotated[
        Path,
        typer.Option("--out-dir", help="Where capture bundles go, one folder per capture by time."),
    ] = Path("captures"),
    reports: Annotated[
        Path, typer.Option("--reports", help="Where reports are drafted and looked up.")
    ] = Path("reports"),
    for_: Annotated[
        str,
        typer.Option(
            "--for", help="How long output must stay at zero with work waiting to be a wedge."
        ),
    ] = "60s",
    every: Annotated[str, typer.Option("--every", help="Time between polls.")] = "5s",
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            help="Metric history kept and written into each capture (default: 5 x --for, "
            "at least 5m).",
        ),
    ] = None,
    cooldown: Annotated[
        str, typer.Option("--cooldown", help="At most one capture per this long.")
    ] = "30m",
    budget: Annotated[
        str,
        typer.Option(
            "--budget",
            help="Disk budget of --out-dir (oldest captures removed first, never the newest "
            "of a signature).",
        ),
    ] = "2G",
    snapshots: Annotated[int, typer.Option("--snapshots", help="py-spy dumps per process.")] = 2,
    interval: Annotated[str, typer.Option("--interval", help="Time between dumps.")] = "1",
    timeout: Annotated[
        str, typer.Option("--timeout", help="Deadline of each scrape, py-spy run and helper.")
    ] = "10s",
    max_size: Annotated[
        str, typer.Option("--max-size", help="Largest answer or dump kept.")
    ] = "16M",
    pyspy: Annotated[str | None, typer.Option("--py-spy", help="The py-spy executable.")] = None,
    on_capture: Annotated[
        str | None,
        typer.Option(
            "--on-capture",
            help="A command run after each capture, split like a shell would but never run "
            "by one: {report} {headline} {bundle} {signature} {verdict}, also in "
            "REPORT_REPORT, REPORT_HEADLINE, ... variables.",
        ),
    ] = None,
    on_capture_timeout: Annotated[
        str, typer.Option("--on-capture-timeout", help="Deadline of --on-capture.")
    ] = "30s",
    once: Annotated[bool, typer.Option("--once", help="Exit after the first capture.")] = False,
    max_time: Annotated[
        str | None, typer.Option("--max-time", help="Stop after this long (scripts, tests).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Watch a running service from outside and capture the next wedge at its onset.

    Polls the metrics URLs (and the health route) with bounded GET requests; never any
    other request to the service. A wedge is zero output (token counter rate or
    throughput) while requests wait, for --for; a quiet service is never one. At the
    onset: `report collect`'s capture (non-blocking py-spy, /proc reads) plus the metric
    history from before it, then the analysis, a report in --reports (or "seen again" in
    the open report of the same signature) and --on-capture. SIGTERM stops it cleanly.
    --json prints one event per line.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app import watch as use_case
    from reporter.collect import CollectRequest, plan
    from reporter.console import documents_watch
    from reporter.model import WedgeSettings

    urls = tuple(metrics_url or ())
    if not urls and not health_url:
        raise UsageError(
            "nothing to watch", tip="pass --metrics-url URL (repeatable) and/or --health-url URL"
        )
    window = plan.seconds(for_, option="--for")
    poll = plan.seconds(every, option="--every")
    kept = plan.seconds(history, option="--history") if history else max(5 * window, 300.0)
    remote = remote_request(Remote(ssh=ssh, exec_template=exec_template, host=host), parallel=None)
    text_urls = [u for u in urls if "/api/v1/query_range" not in u]
    collect = CollectRequest(
        out=out_dir,
        pids=tuple(pid or ()),
        match=match,
        children_of=children_of,
        snapshots=snapshots,
        interval=plan.seconds(interval, option="--interval", allow_zero=True),
        blocking=False,
        metrics_url=text_urls[0] if text_urls else None,
        scrape_every=min(poll, 1.0),
        scrape_for=min(2 * poll, 2.0),
        timeout=plan.seconds(timeout, option="--timeout"),
        pyspy=pyspy,
        units=tuple(unit or ()),
        command=shlex.join(["report", *sys.argv[1:]]),
        max_size=size(max_size, "--max-size"),
        remote=remote,
    )
    if not (collect.wants_processes or remote is not None or collect.metrics_url):
        raise UsageError(
            "nothing to capture at a wedge",
            tip="name the processes (--match, --pid) or hosts (--ssh, --exec), or a /metrics URL",
        )
    made = use_case.WatchRequest(
        metrics_urls=urls,
        health_url=health_url,
        health_timeout=plan.seconds(health_timeout, option="--health-timeout"),
        settings=WedgeSettings(window_seconds=window),
        every=poll,
        history=kept,
        cooldown=plan.seconds(cooldown, option="--cooldown", allow_zero=True),
        out_dir=out_dir,
        reports=reports,
        budget=size(budget, "--budget"),
        collect=collect,
        on_capture=tuple(shlex.split(on_capture)) if on_capture else (),
        on_capture_timeout=plan.seconds(on_capture_timeout, option="--on-capture-timeout"),
        once=once,
        max_time=plan.seconds(max_time, option="--max-time") if max_time else None,
    )
    # Checked before the first poll: a mistake shows now, not at 3 a.m.
    from reporter.collect.watch import is_query_range, split_query

    for url in urls:
        if is_query_range(url):
            split_query(url)

    def emit(event: Event) -> None:
        if as_json:
            sys.stdout.write(documents_watch.line(documents_watch.event_document(event)))
            sys.stdout.flush()
        else:
            # Masked and inert like every line the CLI prints: an event quotes the target.
            echo(masked(f"{event.at:%H:%M:%S} {event.kind}: {event.text}"), file=sys.stderr)
            sys.stderr.flush()

    stop = _stop_on_signals()
    code = use_case.watch(made, emit=emit, stop=stop)
    raise typer.Exit(code)


def _stop_on_signals() -> threading.Event:
    """A stop switch that SIGTERM and Ctrl-C set: open reads end, the loop stops cleanly."""
    import signal

    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop
