"""Hostile hosts, round 3 (issue 32 steps 3-6): what a host sends is bounded, checked record by
record, and written only inside `--out`; signals leave a usable bundle; host folders are unique.

The hosts are `hostile_host.py` behind `--exec` (the probe program the collector appends is
ignored). Most runs are in-process (`collect.collect`) so that caps can be made small with
`monkeypatch`; the signal tests run `report collect` as a process. Figures for the full-size
attacks (flood, 200,000 records, 20,001 files, before and after) come from
`benchmarks/hostile_hosts.py`, not from here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from reporter.collect import collect, hostrecords, outdir, remote, remotehosts
from reporter.collect.plan import CollectRequest, RemoteRequest
from reporter.core.errors import EvidenceError, OutputError, UsageError
from reporter.load.bundle import load

from .hostile_host import make_deep

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HOSTILE = HERE / "hostile_host.py"


def _request(out: Path, mode: str, *hosts: str, **kw: Any) -> CollectRequest:
    return CollectRequest(
        out=out,
        match="x",
        remote=RemoteRequest(
            hosts=hosts or ("box-1",),
            exec_template=f"{sys.executable} {HOSTILE} {mode} {{host}}",
        ),
        **kw,
    )


def _collect(request: CollectRequest) -> Any:
    lines: list[str] = []
    summary = collect(request, progress=lines.append, stop=threading.Event())
    return summary, tomllib.loads((request.out / "bundle.toml").read_text(encoding="utf-8"))


def _hosts(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["host"]: h for h in manifest["collect"]["remote"]}


# -- step 3: bounded host output ------------------------------------------------------------------


def test_a_host_past_the_byte_cap_is_incomplete_and_names_it(tmp_path: Path) -> None:
    # One endless line, 64 MiB at most from the generator; the cap (1 MiB) stops it first.
    request = _request(tmp_path / "b", f"flood:{64 << 20}", max_size=1 << 20)
    summary, manifest = _collect(request)
    host = _hosts(manifest)["box-1"]
    assert host["status"] == "incomplete"
    assert "more than 1.0 MiB (--max-size, per host)" in host["reason"]
    assert summary.status.value == "incomplete"


def test_a_host_past_the_record_cap_is_incomplete_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hostrecords, "MAX_HOST_RECORDS", 50)
    _summary, manifest = _collect(_request(tmp_path / "b", "many:500"))
    host = _hosts(manifest)["box-1"]
    assert host["status"] == "incomplete"
    assert "more than 50 records (the cap per host)" in host["reason"]
    # What came before the cap is kept: the dump sent first.
    assert host["dumps"] == 1


def test_a_host_past_the_file_cap_writes_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "MAX_HOST_FILES", 7)
    _summary, manifest = _collect(_request(tmp_path / "b", "files:40"))
    host = _hosts(manifest)["box-1"]
    assert host["status"] == "incomplete"
    assert "more than 7 files (the cap per host)" in host["reason"]
    written = list((tmp_path / "b" / "hosts" / "box-1" / "pyspy").iterdir())
    assert len(written) == 7


def test_writing_a_hosts_records_stops_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The host answered, but its deadline has passed by the time its records are written.
    monkeypatch.setattr(remote.RemoteSteps, "write_until", lambda _self, _run: 0.0)
    _summary, manifest = _collect(_request(tmp_path / "b", "files:30"))
    host = _hosts(manifest)["box-1"]
    assert host["status"] == "incomplete"
    assert "its deadline (--host-timeout) passed while its records were written" in host["reason"]
    assert "33 of 33 were not" in host["reason"]  # hello, pyspy, 30 dumps, end
    assert not (tmp_path / "b" / "hosts").exists()


def test_parallel_has_a_ceiling(tmp_path: Path) -> None:
    request = _request(tmp_path / "b", "bad")
    wide = CollectRequest(
        out=request.out,
        match="x",
        remote=RemoteRequest(hosts=("a",), exec_template="env {host}", parallel=100_000),
    )
    with pytest.raises(UsageError, match="more than 256 hosts at once"):
        remotehosts.validate_remote(wide)


def test_hosts_on_stdin_are_capped(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reporter", "collect", "-o", str(tmp_path / "b"),
         "--exec", "true {host}", "--hosts-file", "-", "--match", "x"],
        input=b"\0" * (remotehosts.HOSTS_FILE_MAX + 10), capture_output=True, timeout=60,
        check=False, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    assert b"more than 16 MiB on stdin" in done.stderr
    assert not (tmp_path / "b").exists()


def test_the_record_sink_never_holds_a_long_line_twice() -> None:
    sink = hostrecords.RecordSink(1000)
    assert sink(b'{"t": "hello"}\ngreeting\n{"t": "nope"}\n[1]\n{"t": "end"')
    assert [r["t"] for r in sink.records] == ["hello"]
    assert sink.noise == ["greeting"]
    assert sink(b"x" * 500)
    assert not sink(b"x" * 500)  # past 1000 bytes
    assert "more than 1000 bytes" in sink.capped or "(--max-size, per host)" in sink.capped


# -- step 4: one bad record costs one record; signals ---------------------------------------------


def test_bad_values_cost_their_record_only(tmp_path: Path) -> None:
    summary, manifest = _collect(_request(tmp_path / "b", "bad", "box-1", "box-2"))
    hosts = _hosts(manifest)
    for name in ("box-1", "box-2"):
        assert hosts[name]["status"] == "partial"
        assert hosts[name]["dumps"] == 2  # the good ones around the bad ones
        assert "10 records of 17 left out" in hosts[name]["reason"]
    assert summary.status.value == "partial"
    reasons = {s["reason"] for s in manifest["collect"]["skipped"]}
    for expected in (
        "not understood: 'pid' is not a PID",
        "not understood: 'pids' is not a list of PIDs",
        "not understood: 'started_at' is not a time with a zone after 1970",
        "not understood: 'seconds' is not a duration",
        "not understood: 'uid' is not a small whole number",
        "not understood: 'name' is not a read the probe was asked for",
    ):
        assert expected in reasons
    bundle = load([tmp_path / "b"])
    assert len(bundle.dumps) == 4


def test_bidi_and_escapes_never_reach_bundle_toml(tmp_path: Path) -> None:
    _collect(_request(tmp_path / "b", "bidi"))
    text = (tmp_path / "b" / "bundle.toml").read_text(encoding="utf-8")
    for char in ("\u202e", "\u2066", "\u2069", "\x1b", "\x07"):
        assert char not in text
    assert 'hostname = "boxgnp.exe"' in text


def _hostile_processes(tag: str) -> list[int]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes()
        except OSError:
            continue
        words = argv.split(b"\0")
        # The hostile host itself (`python hostile_host.py sleep TAG ...`), not the collector
        # whose --exec template names it too.
        if len(words) > 3 and words[1].endswith(b"hostile_host.py") and words[3] == tag.encode():
            found.append(int(cmdline.parent.name))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_run_with_a_usable_bundle_and_no_engine_left(
    tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "b"
    tag = f"tag-{sig.name}-{os.getpid()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reporter", "collect", "-o", str(out),
         "--exec", f"{sys.executable} {HOSTILE} sleep {{host}}", "--host", tag,
         "--match", "x"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    try:
        for _ in range(200):  # until the engine runs
            if _hostile_processes(tag):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = _hostile_processes(tag)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err.decode()
    assert not left
    manifest = tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    assert manifest["collect"]["status"] == "interrupted"
    assert _hosts(manifest)[tag]["status"] == "interrupted"
    assert not (out / outdir.LOCK_NAME).exists()


# -- step 5: no writes outside --out --------------------------------------------------------------


def test_a_link_planted_during_the_run_redirects_nothing(tmp_path: Path) -> None:
    out, aim = tmp_path / "b", tmp_path / "elsewhere"
    aim.mkdir()
    _summary, manifest = _collect(_request(out, f"plant:{out}:{aim}"))
    assert list(aim.iterdir()) == []
    host = _hosts(manifest)["box-1"]
    assert host["status"] == "incomplete"
    assert "hosts: is not a folder this collection made" in host["reason"]


def test_out_must_be_new_or_an_empty_folder_of_ours(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(UsageError, match="is a symbolic link"):
        outdir.check_new_out(link)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UsageError, match="anyone can write into it"):
        outdir.OutDir.claim(shared)
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        with pytest.raises(UsageError, match="belongs to uid 65534, not to you"):
            outdir.check_new_out(foreign)


def test_a_second_collect_into_the_same_out_is_refused(tmp_path: Path) -> None:
    first = outdir.OutDir.claim(tmp_path / "b")
    try:
        with pytest.raises(UsageError, match="another report collect is writing into it"):
            outdir.OutDir.claim(tmp_path / "b")
        first.write_text("hosts/a/x.txt", "one")
    finally:
        first.close()
    # Once the first is done, the folder is not empty: still refused.
    with pytest.raises(UsageError, match="not an empty folder"):
        outdir.OutDir.claim(tmp_path / "b")
    assert not (tmp_path / "b" / outdir.LOCK_NAME).exists()


def test_writes_never_follow_a_link_inside_out(tmp_path: Path) -> None:
    aim = tmp_path / "aim"
    aim.mkdir()
    out = outdir.OutDir.claim(tmp_path / "b")
    try:
        (tmp_path / "b" / "pyspy").symlink_to(aim)
        with pytest.raises(OutputError, match="is not a folder this collection made"):
            out.write_text("pyspy/pid1-s0.txt", "dump")
        (tmp_path / "b" / "f.txt").symlink_to(aim / "f.txt")
        out.write_text("f.txt", "text")  # replaces the link itself, never writes through it
        with pytest.raises(OutputError, match="not a path inside the bundle"):
            out.write_text("../escape.txt", "x")
    finally:
        out.close()
    assert list(aim.iterdir()) == []
    assert (tmp_path / "b" / "f.txt").read_text() == "text"


# -- step 6: unique host folders ------------------------------------------------------------------


def test_host_folders_are_unique_and_plain_names_stay_plain() -> None:
    pod = "a" * 40 + "." + "b" * 40 + ".pod-"
    names = ["normal.1", "normal_1", "normal-1", pod + "1", pod + "2", "node-1:22102",
             "node-0", "root@good", "good"]  # fmt: skip
    folders = remotehosts.host_folders(names)
    assert len(set(folders.values())) == len(names)
    assert folders["normal-1"] == "normal-1"
    assert folders["node-0"] == "node-0"
    assert folders["good"] == "good"
    assert folders["node-1:22102"] == "node-1-22102"  # the README's form: nothing lost
    assert folders["normal.1"].startswith("normal-1-") and len(folders["normal.1"]) == 17
    # A literal host named like another's port form: the port form gets the hash.
    both = remotehosts.host_folders(["node-1:22102", "node-1-22102"])
    assert both["node-1-22102"] == "node-1-22102" and both["node-1:22102"] != "node-1-22102"


def test_ssh_hosts_that_differ_only_by_user_keep_it_in_their_name() -> None:
    hosts = remotehosts.remote_hosts(RemoteRequest(hosts=("root@good", "good", "ops@other")))
    assert [h.name for h in hosts] == ["root@good", "good", "other"]


def test_colliding_slugs_load_back_as_separate_hosts(tmp_path: Path) -> None:
    _collect(_request(tmp_path / "b", "bad", "normal.1", "normal_1"))
    folders = sorted(p.name for p in (tmp_path / "b" / "hosts").iterdir())
    assert len(folders) == 2
    bundle = load([tmp_path / "b"])
    assert {d.source.host for d in bundle.dumps if hasattr(d.source, "host")} <= {
        "normal.1",
        "normal_1",
    }
    assert len(bundle.dumps) == 4


# -- smaller defects ------------------------------------------------------------------------------


def test_no_usable_evidence_names_the_depth_cap(tmp_path: Path) -> None:
    make_deep(tmp_path, 100)
    with pytest.raises(EvidenceError, match=r"not read: d/d/.* nested deeper than 64 folders"):
        load([tmp_path])
