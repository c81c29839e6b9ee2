"""Remote collection without sshd: destinations and templates, the probe run as a real program
on this host, and the transport's failures (an engine that fails, hangs or greets), through
an argv engine (`env NAME={host}`) that runs the probe here as `kubectl exec` would there.

The same paths through a real sshd are in test_remote_live.py."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reporter.collect import hostprocs, plan, procfs, remote, remotehosts
from reporter.collect.plan import CollectRequest, RemoteRequest
from reporter.core.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
# A process this file starts and the collections look for; the token is a secret shape.
# The run's PID makes it this run's own: two suites on one machine (or a target left
# behind by a killed run) must never match each other's targets.
MARK = f"reporter_remote_test_target_{os.getpid()}"
SECRET = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM"


def _request(tmp: Path, **kw: object) -> CollectRequest:
    remote_kw = {k: kw.pop(k) for k in list(kw) if k in RemoteRequest.__dataclass_fields__}
    return CollectRequest(
        out=tmp / "bundle",
        match=kw.pop("match", MARK),  # type: ignore[arg-type]
        remote=RemoteRequest(**remote_kw),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("node-3", (None, "node-3", None)),
        ("root@node-3", ("root", "node-3", None)),
        ("root@node-3:2222", ("root", "node-3", 2222)),
        ("10.0.0.7:22", (None, "10.0.0.7", 22)),
        ("[fe80::1]:2222", (None, "fe80::1", 2222)),
        ("fe80::1", (None, "fe80::1", None)),
    ],
)
def test_ssh_destinations(spec: str, parsed: tuple[str | None, str, int | None]) -> None:
    assert remotehosts.parse_ssh(spec) == parsed


@pytest.mark.parametrize("spec", ["-oProxyCommand=x", "node:ssh", "@node", "node:70000", ""])
def test_bad_ssh_destinations_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        remotehosts.parse_ssh(spec)


def test_the_ssh_command_is_batch_mode_with_the_users_config() -> None:
    request = RemoteRequest(
        hosts=("ops@node-3:2222",),
        ssh_options=("ProxyJump=bastion",),
        ssh_config=Path("/etc/lab.conf"),
    )
    host = remotehosts.ssh_host("ops@node-3:2222", request)
    assert host.name == "node-3:2222"
    assert host.via == "ssh ops@node-3:2222"
    argv = host.argv(["python3", "-c", "print('x y')"])
    assert argv[:2] == ("ssh", "-T")
    text = " ".join(argv)
    assert "-o BatchMode=yes" in text and "-o ConnectTimeout=" in text
    assert "-F /etc/lab.conf" in text and "-o ProxyJump=bastion" in text
    assert "-p 2222 -l ops -- node-3" in text
    # The remote program is one shell-quoted line: the remote shell gives back the argv.
    assert shlex.split(argv[-1]) == ["python3", "-c", "print('x y')"]


def test_templates_pass_arguments_through_except_to_ssh() -> None:
    kubectl = remotehosts.exec_host("kubectl exec -n prod {host} --", "decode-0")
    assert kubectl.argv(["python3", "-c", "a b"]) == (
        "kubectl", "exec", "-n", "prod", "decode-0", "--", "python3", "-c", "a b",
    )  # fmt: skip
    srun = remotehosts.exec_host("srun --jobid 4242 --overlap -w {host}", "gpu-17")
    assert srun.argv(["x"])[-2:] == ("gpu-17", "x")
    ssh = remotehosts.exec_host("ssh -F /etc/lab.conf {host}", "node-a")
    assert ssh.shell and ssh.argv(["python3", "-c", "a b"])[-1] == "python3 -c 'a b'"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hosts": ()}, "no host"),
        ({"exec_template": "kubectl exec -n prod --"}, "has no {host}"),
        ({"hosts": ("a", "a")}, "named twice"),
        ({"hosts": ("-oProxyCommand=evil",)}, "not a host name"),
        ({"hosts": ("two words",)}, "not a host name"),
        ({"parallel": 0}, "--parallel"),
        (
            {"deadline": 20.0},
            "--host-timeout 20s is too short: each host needs at least 77 s (2 s between the "
            "first and last of 3 snapshots, 6 x --timeout 10s for the dump rounds, py-spy "
            "--version, the journal and kernel log, and the package listing, 10 s to connect "
            "and 5 s for the way back)",
        ),
        ({"python": "'unclosed"}, "No closing quotation"),
    ],
)
def test_remote_requests_are_checked(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    kw: dict[str, object] = {"hosts": ("node-a",), **changes}
    with pytest.raises(UsageError, match=re.escape(message)):
        remotehosts.validate_remote(_request(tmp_path, **kw))


@pytest.mark.parametrize(
    "option", [{"units": ("sglang.service",)}, {"pyspy": "/bin/py-spy"}, {"fr_dirs": (ROOT,)}]
)
def test_options_that_read_this_host_are_refused_remotely(
    tmp_path: Path, option: dict[str, Any]
) -> None:
    request = CollectRequest(
        out=tmp_path / "b", match=MARK, remote=RemoteRequest(hosts=("node-a",)), **option
    )
    with pytest.raises(UsageError, match="does not apply with --ssh/--exec"):
        remotehosts.validate_remote(request)


def test_the_minimum_host_timeout_is_accepted_and_the_default_exceeds_it(tmp_path: Path) -> None:
    request = _request(tmp_path, hosts=("node-a",), snapshots=2, interval=3.0, timeout=4.0)
    # Two dump rounds, py-spy --version, the journal and dmesg, the package listing.
    assert remotehosts.minimum_host_timeout(request) == 3 + 5 * 4 + 10 + 5
    assert remotehosts.host_deadline(request) == remotehosts.minimum_host_timeout(request) + 15
    exact = _request(tmp_path, hosts=("node-a",), snapshots=2, interval=3.0, timeout=4.0,
                     deadline=38.0)  # fmt: skip
    remotehosts.validate_remote(exact)
    assert remote.probe_options(exact, 38.0)["deadline"] == 3 + 5 * 4
    # Without the journal and the kernel log, their --timeout is not counted.
    quiet = _request(tmp_path, hosts=("node-a",), snapshots=2, interval=3.0, timeout=4.0,
                     journal=False, kernel_log=False)  # fmt: skip
    assert remotehosts.minimum_host_timeout(quiet) == 3 + 4 * 4 + 10 + 5


def test_hosts_files_take_one_host_a_line() -> None:
    text = "# job 4242\nnode-a\n\n  root@node-b:2222   # the second node\n"
    assert remotehosts.parse_hosts_file(text, source="hosts.txt") == ("node-a", "root@node-b:2222")
    with pytest.raises(UsageError, match=re.escape("hosts.txt:2: more than one word")):
        remotehosts.parse_hosts_file("x\nnode-a node-b\n", source="hosts.txt")
    with pytest.raises(UsageError, match="no host"):
        remotehosts.parse_hosts_file("# nothing\n", source="hosts.txt")


@pytest.mark.parametrize("name", remote.HOST_MODULES)
def test_what_the_probe_carries_stays_python_3_8_and_standard_library_only(name: str) -> None:
    source = (ROOT / Path(*name.split("."))).with_suffix(".py").read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            # Another carried module is fine: it is on the host too.
            carried = {f"{node.module}.{a.name}" for a in node.names} <= set(remote.HOST_MODULES)
            imported |= set() if carried else {node.module.split(".")[0]}
        elif isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_carried_modules_run_under_their_own_names(tmp_path: Path) -> None:
    # The bootstrap alone, with a probe that stops at once (no process matches).
    program = remote.probe_program(
        sys.executable, remote.probe_options(_request(tmp_path, hosts=("a",), match="^$x"), 60)
    )
    done = subprocess.run(program, capture_output=True, text=True, timeout=60, check=False,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    kinds = [json.loads(line)["t"] for line in done.stdout.splitlines()]
    assert kinds[0] == "hello" and kinds[-1] == "end"


def test_the_bootstrap_is_one_shell_safe_argument(tmp_path: Path) -> None:
    program = remote.probe_program(
        "sudo -n python3", remote.probe_options(_request(tmp_path, hosts=("a",)), 60)
    )
    assert program[:3] == ["sudo", "-n", "python3"]
    assert program[3] == "-c" and "\n" not in program[4] and "'" not in program[4]
    assert len(program[4]) < 64 * 1024  # far below the kernel's limit for one argument


@pytest.fixture(scope="module")
def target() -> Iterator[subprocess.Popen[bytes]]:
    """A Python process to collect from, with a secret in its environment."""
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import time  # {MARK}\nwhile True: time.sleep(0.2)"],
        env={**os.environ, "HF_TOKEN": SECRET},
        start_new_session=True,
    )
    time.sleep(0.5)
    yield proc
    proc.kill()
    proc.wait()


def test_the_probe_selects_what_the_local_collector_selects(
    target: subprocess.Popen[bytes],
) -> None:
    for match in (MARK, "python", "sh", "no-such-process-anywhere"):
        request = CollectRequest(out=Path("unused"), match=match)
        processes = procfs.list_processes()
        mine = plan.select_targets(
            processes, request, own_pid=os.getpid(), is_python=procfs.looks_like_python
        )
        listed = hostprocs.list_processes()
        ours, passed, error = hostprocs.select(listed, {"match": match}, os.getpid())
        assert not error
        # Processes may start or end between the two reads: compare on those both saw.
        seen = {p.pid for p in processes} & {p["pid"] for p in listed}
        assert {t.process.pid for t in mine.targets} & seen == {p["pid"] for p, _ in ours} & seen
        assert {(p.process.pid, p.reason) for p in mine.passed if p.process.pid in seen} == {
            (p["pid"], why) for p, why in passed if p["pid"] in seen
        }
        if match == MARK:
            assert [p["pid"] for p, _ in ours] == [target.pid]


def _pyspy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        pytest.skip("py-spy is not installed")
    return found


def _collect(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reporter", "collect", "-o", str(tmp / "bundle"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def _manifest(tmp: Path) -> Any:
    return tomllib.loads((tmp / "bundle" / "bundle.toml").read_text(encoding="utf-8"))


@pytest.mark.live
def test_an_argv_engine_runs_the_probe_and_secrets_are_redacted(
    tmp_path: Path, target: subprocess.Popen[bytes]
) -> None:
    done = _collect(
        tmp_path,
        "--exec", "env REPORTER_TEST_HOST={host}",
        "--host", "box-1",
        "--remote-python", sys.executable,
        "--remote-py-spy", _pyspy(),
        "--match", MARK,
        "--snapshots", "2", "--interval", "0.2", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "complete"
    (host,) = summary["hosts"]
    assert (host["host"], host["status"], host["targets"], host["dumps"]) == (
        "box-1",
        "complete",
        1,
        2,
    )
    root = tmp_path / "bundle" / "hosts" / "box-1"
    assert sorted(p.name for p in (root / "pyspy").iterdir()) == [
        f"pid{target.pid}-s0.txt",
        f"pid{target.pid}-s1.txt",
    ]
    environ = (root / "env" / f"pid{target.pid}.environ").read_bytes()
    assert b"HF_TOKEN=" in environ and SECRET.encode() not in environ
    every = [p.read_text(errors="replace") for p in (tmp_path / "bundle").rglob("*") if p.is_file()]
    assert SECRET not in "".join(every)
    manifest = _manifest(tmp_path)
    assert {e["host"] for e in manifest["evidence"]} == {"box-1"}


@pytest.mark.parametrize(
    ("template", "status", "reason"),
    [
        ("sh -c 'echo {host}: no such pod >&2; exit 1'", "failed", "no such pod"),
        ("sh -c 'sleep 30' {host}", "timeout", "no answer within"),
        ("sh -c 'echo Welcome to {host}; exit 0'", "failed", "printed 'Welcome to box-1'"),
        ("/nonexistent/engine {host}", "failed", "cannot run /nonexistent/engine"),
    ],
)
def test_a_host_that_fails_is_recorded_with_its_reason(
    tmp_path: Path, template: str, status: str, reason: str
) -> None:
    # The shortest --host-timeout one half-second snapshot allows (see `minimum_host_timeout`).
    done = _collect(
        tmp_path,
        "--exec", template, "--host", "box-1", "--match", MARK,
        "--snapshots", "1", "--timeout", "0.5s", "--host-timeout", "17s",
    )  # fmt: skip
    # No stack from any host: status incomplete, exit 1, and the reason on stderr.
    assert done.returncode == 1, done.stderr
    assert f"host box-1: {status}" in done.stderr
    remote_note = _manifest(tmp_path)["collect"]["remote"][0]
    assert remote_note["status"] == status
    assert reason in remote_note["reason"]


@pytest.mark.live
def test_greetings_on_stdout_are_not_records(
    tmp_path: Path, target: subprocess.Popen[bytes]
) -> None:
    # A login script that prints before the command runs (as some ssh hosts do).
    done = _collect(
        tmp_path,
        "--exec", "sh -c 'echo Welcome to {host}; exec \"$@\"' sh",
        "--host", "box-1",
        "--remote-python", sys.executable,
        "--remote-py-spy", _pyspy(),
        "--match", MARK, "--snapshots", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _manifest(tmp_path)["collect"]["remote"][0]["status"] == "complete"


def test_no_match_on_a_host_says_what_runs_there(tmp_path: Path) -> None:
    done = _collect(
        tmp_path,
        "--exec", "env REPORTER_TEST_HOST={host}",
        "--host", "box-1",
        "--remote-python", sys.executable,
        "--match", "no-such-process-anywhere-xyz",
    )  # fmt: skip
    assert done.returncode == 1
    note = _manifest(tmp_path)["collect"]["remote"][0]
    assert note["status"] == "incomplete"
    assert "no process matches 'no-such-process-anywhere-xyz'" in note["reason"]


def test_a_host_that_lost_a_snapshot_is_partial_never_complete(tmp_path: Path) -> None:
    # A canned host: the "engine" prints what a probe whose deadline came after its first
    # snapshot prints, and ignores the program it is handed.
    dump = (
        "Process 41: python serve.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
        'Thread 41 (idle): "MainThread"\n    wait (threading.py:320)\n'
    )
    records = [
        {"t": "hello", "hostname": "box-1", "python": "3.11.7", "uid": 0, "pid": 9},
        {"t": "target", "pid": 41, "ppid": 1, "pgid": 41, "uid": 0, "title": "python serve.py",
         "selected_by": "--match", "launcher": None},
        {"t": "pyspy", "path": "/usr/bin/py-spy", "version": "py-spy 0.4.3", "searched": "PATH",
         "refused": [], "uid": 0},
        {"t": "dump", "pid": 41, "snapshot": 0, "started_at": "2026-12-07T10:00:00.000Z",
         "seconds": 0.2, "returncode": 0, "stdout": dump, "stderr": "", "timed_out": False,
         "launch_error": "", "attempts": 1},
        {"t": "skip", "what": "py-spy snapshot 2 and later",
         "reason": "the host's deadline would pass first", "lost": [1, 2]},
        {"t": "end", "reason": ""},
    ]  # fmt: skip
    canned = tmp_path / "records.jsonl"
    canned.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    done = _collect(
        tmp_path, "--exec", f"sh -c 'cat {canned}' {{host}}", "--host", "box-1", "--match", MARK
    )
    assert done.returncode == 0, done.stderr
    manifest = _manifest(tmp_path)
    assert manifest["collect"]["status"] == "partial"
    note = manifest["collect"]["remote"][0]
    assert note["status"] == "partial" and note["dumps"] == 1
    assert note["reason"].startswith("1 of 3 snapshots taken: the host's deadline would have")


def test_engines_get_a_minimal_environment(tmp_path: Path) -> None:
    # The "engine" writes the environment it was given and stops.
    seen = tmp_path / "env.txt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reporter",
            "collect",
            "-o",
            str(tmp_path / "bundle"),
            "--exec",
            f"sh -c 'env > {seen}' {{host}}",
            "--host",
            "box-1",
            "--match",
            MARK,
            "--exec-env",
            "KUBECONFIG",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={
            **os.environ,
            "GH_TOKEN": "ghp_" + "x" * 36,
            "KUBECONFIG": "/etc/kube/prod.yaml",
            "AWS_SECRET_ACCESS_KEY": "y" * 40,
        },
    )
    assert done.returncode == 1, done.stderr  # the engine printed no capture
    names = {line.split("=", 1)[0] for line in seen.read_text(encoding="utf-8").splitlines()}
    assert "KUBECONFIG" in names and "PATH" in names
    assert not names & {"GH_TOKEN", "AWS_SECRET_ACCESS_KEY"}
    assert names <= {*remotehosts.ENGINE_ENV, "KUBECONFIG", "PWD", "SHLVL", "_", "OLDPWD"}


def test_exec_env_takes_names_only(tmp_path: Path) -> None:
    request = _request(tmp_path, hosts=("box-1",), exec_template="env {host}",
                       exec_env=("GH_TOKEN=ghp_x",))  # fmt: skip
    with pytest.raises(UsageError, match="takes a variable's name") as caught:
        remotehosts.validate_remote(request)
    assert "ghp_x" not in str(caught.value)


@pytest.mark.parametrize(
    ("template", "engine"),
    [
        ("timeout 60 ssh {host}", "ssh"),
        ("timeout -s KILL -k 5 60 /usr/bin/ssh -F lab.conf {host}", "ssh"),
        ("sudo -u ops ssh {host}", "ssh"),
        ("env KUBECONFIG=/k.yaml kubectl exec {host} --", "kubectl"),
        ("nice -n 10 srun -w {host}", "srun"),
        ("setsid nohup autossh {host}", "autossh"),
    ],
)
def test_a_wrapped_engine_is_recognised(template: str, engine: str) -> None:
    assert remotehosts.engine_of(shlex.split(template)) == engine
    assert remotehosts.exec_host(template, "n").shell is (engine in ("ssh", "autossh"))


def test_the_collector_is_left_out_when_its_host_is_in_the_list() -> None:
    # This test process stands for the collector: a probe on this host, not below it
    # (own_pid 1 has no ancestors), must leave it out and say so.
    listed = hostprocs.list_processes()
    pattern = re.escape(str(Path(sys.argv[0]).name)) + "|pytest"
    ours, _passed, _error = hostprocs.select(listed, {"match": pattern}, 1)
    assert os.getpid() in {p["pid"] for p, _ in ours}
    opts = {"match": pattern, "collector": hostprocs.whoami()}
    ours, passed, _error = hostprocs.select(listed, opts, 1)
    assert os.getpid() not in {p["pid"] for p, _ in ours}
    assert (os.getpid(), "report collect itself (it runs on this host)") in {
        (p["pid"], why) for p, why in passed
    }
    # Another machine (or PID namespace) with the same PID is not us.
    elsewhere = {**hostprocs.whoami(), "boot_id": "another-machine"}
    ours, _passed, _error = hostprocs.select(listed, {"match": pattern, "collector": elsewhere}, 1)
    assert os.getpid() in {p["pid"] for p, _ in ours}


def _probe_record_kinds() -> set[str]:
    """Every `"t"` the probe's source writes."""
    source = (ROOT / "reporter" / "collect" / "probe.py").read_text(encoding="utf-8")
    return set(re.findall(r"""["']t["']: ["'](\w+)["']""", source)) | {"dump"}


def test_every_record_the_probe_sends_is_one_the_collector_files() -> None:
    kinds = _probe_record_kinds()
    assert {"round", "log", "file", "dump", "hello", "end"} <= kinds
    handled = {name[3:] for name in dir(remote._Recorder) if name.startswith("on_")}
    # hello and end are read where the host's outcome is decided.
    assert kinds - {"hello", "end"} <= handled, kinds - handled
    # Where the collector lists the kinds it accepts, each one the probe sends is there.
    accepted = getattr(remote, "RECORD_KINDS", None)
    if accepted is not None:
        assert kinds <= set(accepted), kinds - set(accepted)


@pytest.fixture
def stuck(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A Python process blocked for good writing to a pipe nobody reads (its stdout)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import sys  # {MARK}\nsys.stdout.write('x' * (1 << 20))"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while "pipe" not in Path(f"/proc/{proc.pid}/wchan").read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the writer did not block"
        time.sleep(0.05)
    yield proc
    proc.kill()
    assert proc.stdout is not None
    proc.stdout.close()
    proc.wait()


@pytest.mark.live
def test_a_host_without_py_spy_still_gives_the_proc_rounds_and_logs_as_here(
    tmp_path: Path, stuck: subprocess.Popen[bytes]
) -> None:
    # The probe runs on this host (same PIDs): its /proc reads and the log's tail must be
    # the very files a local capture writes, but for the moment of the read (`at=`).
    log = tmp_path / "job.log"
    log.write_text("".join(f"2026-12-07 12:00:{i:02d},000 INFO step {i}\n" for i in range(50)))
    common = ("--pid", str(stuck.pid), "--snapshots", "2", "--interval", "0.2",
              "--log", str(log), "--log-lines", "10", "--no-kernel-log")  # fmt: skip
    here = _collect(tmp_path / "here", "--py-spy", "/nonexistent/py-spy", *common)
    assert here.returncode == 1, here.stderr  # no stacks without py-spy
    there = _collect(
        tmp_path,
        "--exec", "env REPORTER_TEST_HOST={host}", "--host", "box-1",
        "--remote-python", sys.executable, "--remote-py-spy", "/nonexistent/py-spy", *common,
    )  # fmt: skip
    assert there.returncode == 1, there.stderr
    note = _manifest(tmp_path)["collect"]["remote"][0]
    assert note["status"] == "incomplete" and "py-spy" in note["reason"]
    mine, theirs = tmp_path / "here" / "bundle", tmp_path / "bundle" / "hosts" / "box-1"
    for k in (0, 1):
        for what in ("threads", "fds", "sockets", "family"):
            name = f"proc/pid{stuck.pid}-s{k}.{what}"
            a, b = ((root / name).read_text(encoding="utf-8") for root in (mine, theirs))
            assert re.sub(r" at=\S+\n", "\n", a, count=1) == re.sub(
                r" at=\S+\n", "\n", b, count=1
            ), name
        assert (theirs / f"proc/pid{stuck.pid}-s{k}.status").is_file()
    assert "\tw\tpipe:[" in (theirs / f"proc/pid{stuck.pid}-s0.fds").read_text()
    assert (theirs / "logs" / "job.log").read_bytes() == (mine / "logs" / "job.log").read_bytes()
    assert (theirs / "logs" / "job.log").read_text().splitlines()[0].endswith("INFO step 40")
    evidence = {e["path"]: e for e in _manifest(tmp_path)["evidence"]}
    entry = evidence["hosts/box-1/logs/job.log"]
    assert (entry["kind"], entry["host"]) == ("log", "box-1")
    assert "on box-1: 10 lines (last 10 lines of 50)" in entry["description"]
    assert evidence[f"hosts/box-1/proc/pid{stuck.pid}-s1.family"]["kind"] == "proc-family"


@pytest.mark.live
def test_a_log_that_is_not_there_is_a_note_for_that_host(tmp_path: Path) -> None:
    done = _collect(
        tmp_path,
        "--exec", "env REPORTER_TEST_HOST={host}", "--host", "box-1",
        "--remote-python", sys.executable, "--remote-py-spy", "/nonexistent/py-spy",
        "--pid", str(os.getpid()), "--snapshots", "1", "--no-kernel-log",
        "--log", "/nonexistent/*.log", "--log", str(tmp_path / "fifo"),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    skipped = {s["what"]: s["reason"] for s in _manifest(tmp_path)["collect"]["skipped"]}
    assert skipped["--log /nonexistent/*.log on box-1"] == "no regular file matches"
    assert skipped[f"--log {tmp_path / 'fifo'} on box-1"].startswith("cannot read it")
