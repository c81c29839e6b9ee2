"""`report collect`: capture live evidence into a new bundle folder."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reporter import console
from reporter.cli.group import cli, echo_lines, masked
from reporter.cli.options import JsonFlag, option_sets, size
from reporter.console.report import collect_lines
from reporter.core.errors import UsageError
from reporter.core.fileio import read_text_bounded

if TYPE_CHECKING:
    from reporter.collect import CollectRequest
    from reporter.collect.plan import RemoteRequest


@dataclass(frozen=True, slots=True)
class Targets:
    """Which processes to capture (none: only the URLs and logs asked for)."""

    pid: Annotated[
        list[int] | None, typer.Option("--pid", help="A process to dump (repeatable).")
    ] = None
    match: Annotated[
        str | None,
        typer.Option(
            "--match",
            help="Regex over process titles and command lines, e.g. 'sglang::scheduler_TP'.",
        ),
    ] = None
    children_of: Annotated[
        int | None,
        typer.Option(
            "--children-of", help="Only descendants of this PID (with --match: that match)."
        ),
    ] = None


@dataclass(frozen=True, slots=True)
class Capture:
    """What to capture from them, and how: dumps, metrics, logs, Flight Recorder, the bundle's title."""

    snapshots: Annotated[int, typer.Option("--snapshots", help="py-spy dumps per process.")] = 3
    interval: Annotated[
        str, typer.Option("--interval", help="Time between snapshots (0.5, 2s, 1m).")
    ] = "1"
    with_locals: Annotated[
        bool, typer.Option("--locals", help="Also dump local variables (secrets redacted).")
    ] = False
    blocking: Annotated[
        bool,
        typer.Option(
            "--blocking/--nonblocking",
            help="--blocking pauses each target while py-spy reads it (more accurate); "
            "default --nonblocking never pauses it.",
            show_default=False,
        ),
    ] = False
    metrics_url: Annotated[
        str | None, typer.Option("--metrics-url", help="A Prometheus /metrics URL to scrape.")
    ] = None
    scrape_every: Annotated[str, typer.Option("--scrape-every", help="Time between scrapes.")] = (
        "2s"
    )
    scrape_for: Annotated[str, typer.Option("--scrape-for", help="How long to scrape.")] = "60s"
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="Prometheus base URL for --query.")
    ] = None
    query: Annotated[
        list[str] | None, typer.Option("--query", help="PromQL for query_range (repeatable).")
    ] = None
    range_: Annotated[
        str, typer.Option("--range", help="How far back the queries reach (30m, 2h).")
    ] = "1h"
    step: Annotated[
        str | None, typer.Option("--step", help="query_range step (default: at most 1000 points).")
    ] = None
    unit: Annotated[
        list[str] | None,
        typer.Option("--unit", help="A systemd unit for `systemctl show` (repeatable)."),
    ] = None
    log: Annotated[
        list[str] | None,
        typer.Option(
            "--log",
            help="A log file whose tail to keep (repeatable; a glob is fine: "
            "'/var/log/sglang/*.log').",
        ),
    ] = None
    journal: Annotated[
        bool,
        typer.Option(
            "--journal/--no-journal",
            help="Keep the journal of the targets' systemd services and of each --unit, "
            "since the service started (skipped where there is no journald).",
        ),
    ] = True
    kernel_log: Annotated[
        bool,
        typer.Option(
            "--kernel-log/--no-kernel-log",
            help="Keep the kernel's log (dmesg) since the earliest target started: OOM kills, "
            "hung tasks, storage errors.",
        ),
    ] = True
    raw_env: Annotated[
        bool,
        typer.Option("--raw-env", help="Keep secrets in environments, command lines and locals."),
    ] = False
    pyspy: Annotated[
        str | None,
        typer.Option(
            "--py-spy",
            help="The py-spy executable (default: beside this Python, then its scripts "
            "folder, then PATH).",
        ),
    ] = None
    title: Annotated[
        str,
        typer.Option(
            "--title",
            help="The bundle's title, which the report then uses instead of its verdict headline.",
        ),
    ] = ""
    wedge_window: Annotated[
        str | None,
        typer.Option(
            "--wedge-window", help="Write `[wedge] window` (for a scrape shorter than 60 s)."
        ),
    ] = None
    torch_debug: Annotated[
        str | None,
        typer.Option(
            "--torch-debug",
            help="torch's debug server (rank 0, e.g. http://127.0.0.1:25999): fetch stacks, "
            "py-spy dumps and Flight Recorder traces of every rank (GET only).",
        ),
    ] = None
    fr_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--fr-dir",
            help="A folder of Flight Recorder dumps a watchdog wrote (repeatable); "
            "/tmp/nccl_trace_rank_* is always looked at.",
        ),
    ] = None


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of every read: time, bytes, lines, how many at once."""

    log_lines: Annotated[
        int, typer.Option("--log-lines", help="Lines kept of each log and journal.")
    ] = 5000
    log_size: Annotated[
        str, typer.Option("--log-size", help="Bytes kept of each log and journal (e.g. 4M).")
    ] = "4M"
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            help="Limit for each py-spy run, helper program and HTTP request (the whole "
            "request: connect, headers and body).",
        ),
    ] = "10s"
    max_size: Annotated[
        str,
        typer.Option(
            "--max-size",
            help="Largest HTTP answer (after decompression), copied dump file or py-spy "
            "output kept (e.g. 64M, 1G); with --ssh/--exec also the most one host may send, "
            "held in at most twice that much memory while it answers.",
        ),
    ] = "64M"
    parallel: Annotated[
        int | None,
        typer.Option(
            "--parallel",
            help="At once: py-spy runs (default 4), or hosts with --ssh/--exec (default 16, "
            "at most 256).",
            show_default=False,
        ),
    ] = None


@dataclass(frozen=True, slots=True)
class Remote:
    """Capture on other hosts (`--ssh`, or `--exec` with `--host`) instead of this one."""

    ssh: Annotated[
        list[str] | None,
        typer.Option(
            "--ssh",
            help="Capture on [USER@]HOST[:PORT] through OpenSSH (repeatable; batch mode, your "
            "ssh config, agent and known_hosts).",
        ),
    ] = None
    exec_template: Annotated[
        str | None,
        typer.Option(
            "--exec",
            help="Capture through a command with {host}: 'kubectl exec -n NS {host} --', "
            "'srun --jobid J --overlap -w {host}', 'docker exec {host}'.",
        ),
    ] = None
    host: Annotated[
        list[str] | None,
        typer.Option("--host", help="A host name for --exec's {host} (repeatable)."),
    ] = None
    hosts_file: Annotated[
        Path | None,
        typer.Option(
            "--hosts-file",
            help="Hosts, one per line (# comments; - reads stdin): ssh destinations, or "
            "--exec names.",
        ),
    ] = None
    remote_python: Annotated[
        str,
        typer.Option(
            "--remote-python", help="The Python on the hosts (3.8+; e.g. 'sudo -n python3')."
        ),
    ] = "python3"
    remote_pyspy: Annotated[
        str | None,
        typer.Option(
            "--remote-py-spy",
            help="py-spy on the hosts: a path, or a name looked up on their PATH (default: the "
            "targets' venv, then PATH, only where no one but root can change it).",
        ),
    ] = None
    host_timeout: Annotated[
        str | None,
        typer.Option(
            "--host-timeout",
            help="Deadline per host, at least (snapshots-1) x interval + (snapshots+2) x "
            "timeout + 15 s (default: that + 15 s).",
        ),
    ] = None
    ssh_option: Annotated[
        list[str] | None,
        typer.Option("--ssh-option", help="An ssh -o option, e.g. ProxyJump=bastion (repeatable)."),
    ] = None
    ssh_config: Annotated[
        Path | None, typer.Option("--ssh-config", help="Another ssh config file (ssh -F).")
    ] = None
    exec_env: Annotated[
        list[str] | None,
        typer.Option(
            "--exec-env",
            help="A variable to pass to ssh or the --exec engine, by name (repeatable; they "
            "get PATH, HOME, LANG and SSH_AUTH_SOCK only).",
        ),
    ] = None


# The order `report collect --help` lists the options in (docs/cli.md follows it).
HELP_ORDER = (
    "out",
    "pid",
    "match",
    "children_of",
    "snapshots",
    "interval",
    "with_locals",
    "blocking",
    "metrics_url",
    "scrape_every",
    "scrape_for",
    "prometheus",
    "query",
    "range_",
    "step",
    "unit",
    "log",
    "log_lines",
    "log_size",
    "journal",
    "kernel_log",
    "raw_env",
    "timeout",
    "max_size",
    "parallel",
    "pyspy",
    "title",
    "wedge_window",
    "torch_debug",
    "fr_dir",
    "ssh",
    "exec_template",
    "host",
    "hosts_file",
    "remote_python",
    "remote_pyspy",
    "host_timeout",
    "ssh_option",
    "ssh_config",
    "exec_env",
    "as_json",
)


@cli.command(
    "collect",
    epilog="Example: report collect -o /tmp/incident-42 --match 'sglang::scheduler_TP'. "
    "Two nodes over ssh: report collect -o /tmp/incident-42 --ssh node-a --ssh node-b "
    "--match 'sglang::scheduler_TP'",
)
@option_sets(HELP_ORDER)
def collect_cmd(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="New bundle folder to write (must not exist, or be empty)."
        ),
    ],
    targets: Targets,
    capture: Capture,
    limits: Limits,
    remote: Remote,
    as_json: JsonFlag = False,
) -> None:
    """Capture evidence from live processes into a bundle, without disturbing them.

    py-spy dumps (non-blocking by default), /metrics scrapes, Prometheus query_range,
    /proc command lines and environments (secrets redacted), per round each target's
    threads' states, fd table, socket rows, parent and children (from /proc only), the
    targets' package versions, `systemctl show`, and the tails of logs and journals. Never calls the serving API, never signals or
    restarts a process. Every read is bounded (--timeout per request, --max-size per
    answer). Ctrl-C leaves a valid partial bundle. Exit 1 with status `incomplete` when no
    stack came back from any process it was asked to dump, or nothing from a URL it was
    asked to read.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.collect import collect
    from reporter.collect import CollectStatus
    from reporter.console import documents_upstream as documents

    made = collect_request(out, targets, capture, limits, remote)
    with console.progress_bars() as (line, tick):
        # Progress quotes the targets (titles, py-spy's errors, URLs): masked here, at the
        # terminal's edge, like the summary below.
        summary = collect(made, progress=lambda text: line(masked(text)), tick=tick)
    if as_json:
        console.emit(documents.collect_document(summary))
    else:
        # The summary quotes the targets (URLs, reasons): masked at the terminal's edge.
        echo_lines((masked(text), to_stderr) for text, to_stderr in collect_lines(summary))
    if summary.status is CollectStatus.INTERRUPTED:
        raise typer.Exit(130)
    if summary.status is CollectStatus.INCOMPLETE:
        raise typer.Exit(1)


def collect_request(
    out: Path, targets: Targets, capture: Capture, limits: Limits, remote: Remote
) -> CollectRequest:
    """The option sets as the collection's `CollectRequest`: durations and sizes read, the
    hosts file read (the remote part first, as its errors come first)."""
    import shlex

    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.collect import CollectRequest, plan

    wanted = remote_request(remote, parallel=limits.parallel)
    parallel = limits.parallel
    return CollectRequest(
        out=out,
        pids=tuple(targets.pid or ()),
        match=targets.match,
        children_of=targets.children_of,
        snapshots=capture.snapshots,
        interval=plan.seconds(capture.interval, option="--interval", allow_zero=True),
        with_locals=capture.with_locals,
        blocking=capture.blocking,
        metrics_url=capture.metrics_url,
        scrape_every=plan.seconds(capture.scrape_every, option="--scrape-every"),
        scrape_for=plan.seconds(capture.scrape_for, option="--scrape-for", allow_zero=True),
        prometheus=capture.prometheus,
        queries=tuple(capture.query or ()),
        range_seconds=plan.seconds(capture.range_, option="--range"),
        step_seconds=plan.seconds(capture.step, option="--step") if capture.step else None,
        units=tuple(capture.unit or ()),
        raw_env=capture.raw_env,
        timeout=plan.seconds(limits.timeout, option="--timeout"),
        parallel=parallel if parallel is not None and wanted is None else plan.DEFAULT_PARALLEL,
        pyspy=capture.pyspy,
        title=capture.title,
        wedge_window=(
            plan.seconds(capture.wedge_window, option="--wedge-window")
            if capture.wedge_window
            else None
        ),
        command=shlex.join(["report", *sys.argv[1:]]),
        torch_debug=capture.torch_debug,
        fr_dirs=tuple(capture.fr_dir or ()),
        max_size=size(limits.max_size, "--max-size"),
        remote=wanted,
        logs=tuple(capture.log or ()),
        log_lines=limits.log_lines,
        log_bytes=size(limits.log_size, "--log-size"),
        journal=capture.journal,
        kernel_log=capture.kernel_log,
    )


def remote_request(remote: Remote, *, parallel: int | None) -> RemoteRequest | None:
    """The remote part of the request (None for a capture on this host); the hosts file is
    read here, at the edge. `parallel`: `--parallel`, hosts at once (None: the default)."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.collect import plan
    from reporter.collect.plan import DEFAULT_REMOTE_PARALLEL, RemoteRequest
    from reporter.collect.remotehosts import HOSTS_FILE_MAX, parse_hosts_file

    deadline = (
        plan.seconds(remote.host_timeout, option="--host-timeout") if remote.host_timeout else None
    )
    ssh, exec_template, hosts = (
        tuple(remote.ssh or ()),
        remote.exec_template,
        tuple(remote.host or ()),
    )
    hosts_file, python, pyspy = remote.hosts_file, remote.remote_python, remote.remote_pyspy
    ssh_options, ssh_config = tuple(remote.ssh_option or ()), remote.ssh_config
    exec_env = tuple(remote.exec_env or ())
    if not (ssh or exec_template or hosts or hosts_file):
        if remote_only := [
            name
            for name, given in (
                ("--remote-py-spy", pyspy is not None),
                ("--ssh-option", bool(ssh_options)),
                ("--ssh-config", ssh_config is not None),
                ("--remote-python", python != "python3"),
                ("--exec-env", bool(exec_env)),
            )
            if given
        ]:
            raise UsageError(
                f"{remote_only[0]} applies to remote capture only",
                tip="add --ssh HOST, or --exec TEMPLATE with --host NAME",
            )
        return None
    if ssh and exec_template:
        raise UsageError(
            "--ssh and --exec cannot be combined",
            tip="use --ssh for OpenSSH, or --exec with --host for another engine",
        )
    if hosts and not exec_template:
        raise UsageError("--host names hosts for --exec", tip="for ssh, use --ssh HOST")
    named = list(ssh or hosts)
    if hosts_file is not None:
        if str(hosts_file) == "-":
            data = sys.stdin.buffer.read(HOSTS_FILE_MAX + 1)
            if len(data) > HOSTS_FILE_MAX:
                raise UsageError(
                    f"--hosts-file -: more than {HOSTS_FILE_MAX >> 20} MiB on stdin",
                    tip="give one host per line; split a larger list over several runs",
                )
            named += parse_hosts_file(data.decode("utf-8", "replace"), source="<stdin>")
        else:
            text = read_text_bounded(hosts_file, max_bytes=HOSTS_FILE_MAX)
            named += parse_hosts_file(text, source=str(hosts_file))
    return RemoteRequest(
        hosts=tuple(named),
        exec_template=exec_template,
        python=python,
        pyspy=pyspy,
        parallel=parallel if parallel is not None else DEFAULT_REMOTE_PARALLEL,
        deadline=deadline,
        ssh_options=ssh_options,
        ssh_config=ssh_config,
        exec_env=exec_env,
    )
