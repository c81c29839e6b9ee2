"""`report collect`: production-safe evidence capture from live processes into a bundle.

Light reads only: `/proc` copies, py-spy dumps (non-blocking unless asked), GET
requests to the metrics and Prometheus URLs the user names, the target
interpreter's package metadata and `systemctl show`. Never a request to the
serving API, never a signal to a target, never a restart.

Modules, the order of a run first:

    session     carry out a collection: select processes, then each step, progress, interruption
    state       what one run shares between its steps, and the helpers they use
    plan        the request, target selection, schedules and file names (pure)
    outdir      the bundle folder, held open for the whole run: no write leaves it
    manifest    `bundle.toml`, rewritten atomically after every step
    procfs      process discovery from `/proc`
    ptrace      may py-spy read a process, and what to do if not
    runner      bounded helper programs (py-spy, an interpreter, systemctl)
    capture     the steps that read the targets: command lines, environments, py-spy rounds
    dumps       py-spy: the command, one bounded run, and what to save
    envcap      command line, environment, installed packages, unit state
    procread    the per-round `/proc` reads the waits need (threads, fds, sockets, family)
    logtail     the tail of each `--log` file, and the journal of the targets' units
    services    the steps that ask services and folders: units, Prometheus, torch, FR files
    scrape      metrics and `query_range` over httpx
    httpread    one bounded HTTP read: deadline, size cap, stop switch
    torchdebug  stacks, dumps and Flight Recorder traces from torch's debug server
    frfiles     Flight Recorder dump files on disk, copied without trusting their names
    manifest_files  where the manifest writer puts `bundle.toml` and its parts (the files seam)
    remote      capture on other hosts through OpenSSH or a command template (`--ssh`, `--exec`)
    remotehosts the hosts and engines of a remote run, their folders and deadlines
    hostrecords what a host sends back: the bounded record sink and its field checks
    probe       the capture program that runs on each remote host, for one run
    hostprocs   the probe's process listing and selection on its host (carried with it)
    watch       the I/O of one `report watch` poll

Secrets are masked at capture by `reporter.secrets.scrub`.
"""

from reporter.collect.manifest import CollectStatus
from reporter.collect.plan import CollectRequest
from reporter.collect.session import CollectSummary, collect

__all__ = ["CollectRequest", "CollectStatus", "CollectSummary", "collect"]
