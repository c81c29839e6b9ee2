"""The hostile-input table (issue 16): one row per way to break the tool, each run as a subprocess.

Every row is held to the rules of `harness.check_rules` (no traceback, one `error:` line
with a `Tip:`, the expected exit code), a watchdog time bound, and "no file outside the
row's outputs changed". Rows build their hostile files in a private tmp folder: FIFOs,
sockets and (as root) a character device made with mknod there; real /dev nodes are only
ever pointed at by symlinks and never written.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .harness import ROOT, Case, Outcome, environment, run_case

TP_DESYNC = ROOT / "fixtures" / "bundles" / "tp_desync"
DUMP = TP_DESYNC / "snapshots" / "rank0_s0.txt"
DUMP1 = TP_DESYNC / "snapshots" / "rank1_s0.txt"
DUMP2 = TP_DESYNC / "snapshots" / "rank2_s0.txt"
ISSUES = ROOT / "fixtures" / "github" / "issues.jsonl"
# The watchdog: far above a normal run on a loaded 2-core machine, far below a hang.
BOUND = 60.0


# Rows whose fix belongs to another branch this round (see the closing note of issue 16):
# they pass the "no traceback, one line" rules already; the stricter expectation is marked.
OWNED_ELSEWHERE = {
    "stack-5000-frames": "v10parse: no recursion on input depth (merge/render)",
    "stack-2000-frames-draft": "v10parse: no recursion on input depth (merge/render)",
    "mermaid-500-edge-chain": "v10parse: iterative tree layout in render/svg.py",
}


# --- builders -----------------------------------------------------------------------------


def bundle(work: Path, name: str = "b") -> Path:
    """A copy of the real tp_desync bundle."""
    target = work / name
    shutil.copytree(TP_DESYNC, target)
    return target


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def sock(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def chardev(path: Path) -> Path:
    """A character device node in tmp (the null device's numbers); a symlink when not root."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        path.symlink_to("/dev/null")
    return path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def report(work: Path) -> Path:
    """A real report drafted from the dump (made in-process: setup, not the row under test)."""
    out = work / "r.md"
    result = subprocess.run(
        [sys.executable, "-m", "reporter", "draft", str(DUMP), "--out", str(out)],
        cwd=work,
        env=environment(work),
        capture_output=True,
        check=False,
        executable=None,
    )
    assert result.returncode == 0, result.stderr
    return out


def deep_frames_dump(frames: int) -> str:
    lines = ["Process 4242: python3 deep.py", "Python v3.11.7 (/usr/bin/python3.11)", ""]
    lines.append('Thread 4242 (idle): "MainThread"')
    lines += [f"    f{n} (deep.py:{n + 1})" for n in range(frames)]
    return "\n".join(lines) + "\n"


def manifest(*entries: str, head: str = 'title = "t"\n') -> str:
    return head + "".join(f'\n[[evidence]]\npath = "{e}"\nkind = "pyspy-text"\n' for e in entries)


# --- setups --------------------------------------------------------------------------------


def s_fifo_loose(work: Path) -> list[str]:
    return ["analyze", str(fifo(work / "dump.txt"))]


def s_fifo_in_bundle(work: Path) -> list[str]:
    b = bundle(work)
    fifo(b / "snapshots" / "stuck.txt")
    return ["analyze", str(b)]


def s_fifo_listed(work: Path) -> list[str]:
    b = bundle(work)
    fifo(b / "pipe.txt")
    write(b / "bundle.toml", manifest("snapshots/rank0_s0.txt", "pipe.txt"))
    return ["analyze", str(b)]


def s_socket_in_bundle(work: Path) -> list[str]:
    b = bundle(work)
    sock(b / "snapshots" / "s.sock")
    return ["analyze", str(b)]


def s_dev_zero_link(work: Path) -> list[str]:
    b = bundle(work)
    (b / "snapshots" / "zero.txt").symlink_to("/dev/zero")
    return ["analyze", str(b)]


def s_dev_zero_listed(work: Path) -> list[str]:
    b = bundle(work)
    (b / "zero.txt").symlink_to("/dev/zero")
    write(b / "bundle.toml", manifest("snapshots/rank0_s0.txt", "zero.txt"))
    return ["analyze", str(b)]


def s_dev_zero_loose(work: Path) -> list[str]:
    (work / "zero.txt").symlink_to("/dev/zero")
    return ["analyze", str(work / "zero.txt"), "--max-file-size", "1M"]


def s_chardev_loose(work: Path) -> list[str]:
    return ["analyze", str(chardev(work / "dev" / "null0"))]


def s_link_outside_unlisted(work: Path) -> list[str]:
    b = bundle(work)
    write(work / "secret.txt", DUMP.read_text())
    (b / "snapshots" / "outside.txt").symlink_to(work / "secret.txt")
    return ["analyze", str(b)]


def s_too_large(work: Path) -> list[str]:
    return ["analyze", str(write(work / "d.txt", DUMP.read_text() * 40)), "--max-file-size", "4K"]


def s_empty(work: Path) -> list[str]:
    return ["analyze", str(write(work / "d.txt", ""))]


def s_binary(work: Path) -> list[str]:
    return ["analyze", str(write(work / "core", bytes(range(256)) * 64))]


def s_missing(work: Path) -> list[str]:
    return ["analyze", str(work / "nope.txt")]


def s_folder_and_file(work: Path) -> list[str]:
    return ["analyze", str(bundle(work)), str(DUMP)]


def s_glob_twice(work: Path) -> list[str]:
    b = bundle(work)
    write(b / "bundle.toml", manifest("snapshots/rank0_s*.txt", "snapshots/rank0_*.txt"))
    return ["analyze", str(b)]


def s_bad_toml(work: Path) -> list[str]:
    b = bundle(work)
    write(b / "bundle.toml", 'title = "unterminated\n')
    return ["analyze", str(b)]


def s_path_escape(work: Path) -> list[str]:
    b = bundle(work)
    write(b / "bundle.toml", manifest("../../etc/passwd"))
    return ["analyze", str(b)]


def s_rank_bool(work: Path) -> list[str]:
    b = bundle(work)
    write(
        b / "bundle.toml",
        'title = "t"\n\n[[evidence]]\npath = "snapshots/rank0_s0.txt"\nrank = true\n',
    )
    return ["analyze", str(b)]


def s_world_size_huge(work: Path) -> list[str]:
    b = bundle(work)
    text = (
        (b / "bundle.toml")
        .read_text()
        .replace("world_size = 4", "world_size = 9223372036854775807")
    )
    write(b / "bundle.toml", text)
    return ["analyze", str(b)]


def s_nul_in_dump(work: Path) -> list[str]:
    text = DUMP.read_text()
    return ["analyze", str(write(work / "d.txt", text[:40] + "\x00" + text[40:]))]


def s_escapes_in_evidence(work: Path) -> list[str]:
    text = DUMP.read_text().replace(
        "all_reduce", "all_reduce\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07", 1
    )
    return ["analyze", str(write(work / "d.txt", text))]


def s_deep_stack(work: Path) -> list[str]:
    return ["analyze", str(write(work / "d.txt", deep_frames_dump(5000)))]


def s_deep_stack_draft(work: Path) -> list[str]:
    return ["draft", str(write(work / "d.txt", deep_frames_dump(2000))), "--out", "out.md"]


def s_init_with_fifo(work: Path) -> list[str]:
    folder = work / "ev"
    write(folder / "rank0.txt", DUMP.read_text())
    fifo(folder / "rank1.txt")
    return ["init", str(folder)]


def s_source_root_fifo(work: Path) -> list[str]:
    src = work / "src"
    for rel in ("torch/distributed/distributed_c10d.py", "sglang/srt/managers/scheduler.py"):
        fifo(src / rel)
    return ["analyze", str(DUMP), "--source-root", str(src)]


def s_out_fifo(work: Path) -> list[str]:
    return ["draft", str(DUMP), "--out", str(fifo(work / "out.md"))]


def s_out_device(work: Path) -> list[str]:
    return ["draft", str(DUMP), "--out", str(chardev(work / "dev" / "full0"))]


def s_out_symlink(work: Path) -> list[str]:
    target = write(work / "precious.md", "my notes\n")
    (work / "link.md").symlink_to(target)
    return ["draft", str(DUMP), "--out", str(work / "link.md")]


def s_out_dev_full_link(work: Path) -> list[str]:
    (work / "full.md").symlink_to("/dev/full")
    return ["draft", str(DUMP), "--out", str(work / "full.md")]


def s_out_not_a_report(work: Path) -> list[str]:
    write(work / "notes.md", "# my own notes\n\nnot a report\n")
    return ["draft", str(DUMP), "--out", str(work / "notes.md")]


def s_out_parent_is_file(work: Path) -> list[str]:
    write(work / "afile", "x\n")
    return ["draft", str(DUMP), "--out", str(work / "afile" / "r.md")]


def s_preview_out_existing(work: Path) -> list[str]:
    src = report(work)
    write(work / "index.html", "<html>my site</html>\n")
    return ["preview", str(src), "--out", str(work / "index.html")]


def s_preview_fifo(work: Path) -> list[str]:
    return ["preview", str(fifo(work / "r.md")), "--out", str(work / "r.html")]


def s_upstream_out_existing(work: Path) -> list[str]:
    write(work / "todo.md", "# todo\n")
    return [
        "upstream",
        "draft",
        str(DUMP),
        "--repo",
        "sgl-project/sglang",
        "--offline",
        "--out",
        str(work / "todo.md"),
    ]


def s_force_twice(work: Path) -> list[str]:
    src = report(work)
    first = subprocess.run(
        [sys.executable, "-m", "reporter", "draft", str(DUMP1), "--out", str(src), "--force"],
        cwd=work,
        env=environment(work),
        capture_output=True,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    return ["draft", str(DUMP2), "--out", str(src), "--force"]


def check_backups(work: Path, outcome: Outcome) -> None:
    assert (work / "r.md.bak").is_file() and (work / "r.md.bak.1").is_file()


def s_non_ascii_titles(work: Path) -> list[str]:
    for name, title in (("a", "推理服务挂起"), ("c", "推理服务卡死")):
        b = bundle(work, name)
        text = (b / "bundle.toml").read_text()
        first = text.split("\n", 3)
        write(b / "bundle.toml", text.replace(first[2], f'title = "{title}"', 1))
    first_run = subprocess.run(
        [sys.executable, "-m", "reporter", "draft", str(work / "a")],
        cwd=work,
        env=environment(work),
        capture_output=True,
        check=False,
    )
    assert first_run.returncode == 0, first_run.stderr
    return ["draft", str(work / "c")]


def check_two_reports(work: Path, outcome: Outcome) -> None:
    made = sorted(p.name for p in (work / "reports").glob("*.md"))
    assert len(made) == 2, made


def s_concurrent_drafts(work: Path) -> list[str]:
    out = report(work)
    # A second writer starts now and races the row's own run on the same report.
    racer = subprocess.Popen(
        [sys.executable, "-m", "reporter", "draft", str(DUMP1), "--out", str(out), "--force"],
        cwd=work,
        env=environment(work),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    (work / "racer.pid").write_text(str(racer.pid))
    RACERS.append(racer)
    return ["draft", str(DUMP2), "--out", str(out), "--force"]


RACERS: list[subprocess.Popen[bytes]] = []
RACED: dict[Path, tuple[int, bytes]] = {}


def wait_racer(work: Path) -> None:
    """Wait for the racing writer (it may take the lock after the row's own run)."""
    racer = RACERS.pop()
    _out, err = racer.communicate(timeout=BOUND)
    RACED[work] = (racer.returncode, err)


def check_race(work: Path, outcome: Outcome) -> None:
    if work not in RACED:
        wait_racer(work)
    code, err = RACED.pop(work)
    assert code == 0, err
    assert b"Traceback" not in err
    text = (work / "r.md").read_text()
    assert text.startswith("---\n") and "<!-- reporter:" in text
    # Both writes happened, one after the other: two generations of backups, no temp file.
    assert (work / "r.md.bak").is_file() and (work / "r.md.bak.1").is_file()
    assert not list(work.glob(".r.md.*.tmp"))


def s_index_nested_and_huge(work: Path) -> list[str]:
    good = ISSUES.read_text().splitlines()[:3]
    lines = [good[0], "[" * 100_000 + "]" * 100_000, json.dumps({"number": 10**30}), *good[1:]]
    write(work / "issues.jsonl", "\n".join(lines) + "\n")
    return ["index", "import", str(work / "issues.jsonl"), "--db", str(work / "i.sqlite3")]


def check_imported(work: Path, outcome: Outcome) -> None:
    assert "imported 3" in outcome.stdout + outcome.stderr


def s_index_hex_token(work: Path) -> list[str]:
    record = json.loads(ISSUES.read_text().splitlines()[0])
    record["number"] = 999_999
    record["body"] = "dump: " + "0123456789abcdef" * 2560  # 40 KiB of hex, one token
    write(work / "issues.jsonl", json.dumps(record) + "\n")
    return ["index", "import", str(work / "issues.jsonl"), "--db", str(work / "i.sqlite3")]


def s_index_fifo(work: Path) -> list[str]:
    return ["index", "import", str(fifo(work / "i.jsonl")), "--db", str(work / "i.sqlite3")]


def s_db_corrupt(work: Path) -> list[str]:
    write(work / "i.sqlite3", b"SQLite format 3\x00" + b"\xde\xad" * 4096)
    return ["index", "export", "--db", str(work / "i.sqlite3")]


def s_db_locked(work: Path) -> list[str]:
    db = work / "i.sqlite3"
    setup = subprocess.run(
        [sys.executable, "-m", "reporter", "index", "import", str(ISSUES), "--db", str(db)],
        cwd=work,
        env=environment(work),
        capture_output=True,
        check=False,
    )
    assert setup.returncode == 0, setup.stderr
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    HOLDERS.append(holder)
    record = json.loads(ISSUES.read_text().splitlines()[0])
    record["title"] += " (edited, so the import must write)"
    write(work / "edited.jsonl", json.dumps(record) + "\n")
    return ["index", "import", str(work / "edited.jsonl"), "--db", str(db)]


HOLDERS: list[sqlite3.Connection] = []


def release_lock(work: Path, outcome: Outcome) -> None:
    HOLDERS.pop().close()


def s_front_matter_deep(work: Path) -> list[str]:
    text = "---\nkind: incident-report\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# T\n"
    return ["lint", str(write(work / "deep.md", text))]


def s_front_matter_deep_preview(work: Path) -> list[str]:
    text = "---\nkind: incident-report\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# T\n"
    return ["preview", str(write(work / "deep.md", text)), "--out", str(work / "deep.html")]


def _bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        refs = ",".join(f"*{previous}" for _ in range(9))
        lines.append(f"{name}: &{name} [{refs}]")
        previous = name
    return "---\nkind: incident-report\n" + "\n".join(lines) + "\n---\n# T\n"


def s_yaml_bomb_lint(work: Path) -> list[str]:
    return ["lint", str(write(work / "bomb.md", _bomb()))]


def s_yaml_bomb_preview(work: Path) -> list[str]:
    return ["preview", str(write(work / "bomb.md", _bomb())), "--out", str(work / "bomb.html")]


def s_yaml_bomb_status(work: Path) -> list[str]:
    write(work / "reports" / "bomb.md", _bomb())
    return ["status", str(work / "reports")]


def s_mermaid_chain(work: Path) -> list[str]:
    edges = "\n".join(f"  n{i} --> n{i + 1}" for i in range(500))
    text = f"# T\n\n```mermaid\ngraph TD\n{edges}\n```\n"
    return ["preview", str(write(work / "m.md", text)), "--out", str(work / "m.html")]


def s_lint_fifo(work: Path) -> list[str]:
    return ["lint", str(fifo(work / "r.md"))]


def s_status_fifo(work: Path) -> list[str]:
    fifo(work / "reports" / "r.md")
    return ["status", str(work / "reports")]


def s_diff_fifo(work: Path) -> list[str]:
    return ["diff", str(fifo(work / "good.environ")), str(DUMP)]


def s_upstream_bad_base_url(work: Path) -> list[str]:
    return ["upstream", "file", str(DUMP), "--repo", "a/b", "--base-url", "not a url", "--yes"]


def s_upstream_closed_port(work: Path) -> list[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return [
        "upstream",
        "file",
        str(DUMP),
        "--repo",
        "a/b",
        "--base-url",
        f"http://127.0.0.1:{port}",
    ]


def s_interrupt(after: float) -> Callable[[Path], list[str]]:
    """A 2,048-rank bundle (benchmarks/generate_bundle.py): analysing it outlasts `after`."""

    def setup(work: Path) -> list[str]:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "generate_bundle.py"),
                str(work / "big"),
                *("--ranks", "4096", "--threads", "4", "--snapshots", "3"),
            ],
            check=True,
            capture_output=True,
        )
        return ["analyze", str(work / "big")]

    return setup


def s_manifest_html_mentions(work: Path) -> list[str]:
    b = bundle(work)
    text = (b / "bundle.toml").read_text()
    text = text.replace(
        'summary = "',
        'summary = "<script>alert(1)</script> <img src=x onerror=alert(1)> cc @octocat ',
        1,
    )
    write(b / "bundle.toml", text)
    return ["draft", str(b), "--out", str(work / "r.md")]


def check_inert_report(work: Path, outcome: Outcome) -> None:
    text = (work / "r.md").read_text()
    assert "<script>alert" not in text
    assert "<img src=x" not in text
    # The mention is kept for the reader, as an inert code span, never as a live `@octocat`.
    assert "`@octocat`" in text
    assert " @octocat" not in text


def check_no_escapes(work: Path, outcome: Outcome) -> None:
    assert "\x1b" not in outcome.stdout + outcome.stderr
    assert "\x07" not in outcome.stdout + outcome.stderr


def check_fifo_kept(name: str) -> Callable[[Path, Outcome], None]:
    def check(work: Path, outcome: Outcome) -> None:
        assert stat.S_ISFIFO(os.lstat(work / name).st_mode)

    return check


def check_link_kept(work: Path, outcome: Outcome) -> None:
    assert (work / "link.md").is_symlink()
    assert (work / "precious.md").read_text() == "my notes\n"


CASES = [
    # inputs
    Case("fifo-loose-file", s_fifo_loose, {1}, "FIFO"),
    Case("fifo-unlisted-in-bundle", s_fifo_in_bundle, {0}, "FIFO"),
    Case("fifo-listed-in-manifest", s_fifo_listed, {1}, "FIFO"),
    Case("socket-in-bundle", s_socket_in_bundle, {0}, "socket"),
    Case("dev-zero-symlink-in-bundle", s_dev_zero_link, {0}, "leaves the bundle"),
    Case("dev-zero-symlink-listed", s_dev_zero_listed, {1}, "outside the bundle"),
    Case("dev-zero-symlink-loose", s_dev_zero_loose, {1}, "character device"),
    Case("char-device-loose", s_chardev_loose, {1}, "not a regular file"),
    Case("unlisted-link-leaving-bundle", s_link_outside_unlisted, {0}, "leaves the bundle"),
    Case("over-max-file-size", s_too_large, {1}, "limit"),
    Case("empty-file", s_empty, {1}, "empty"),
    Case("binary-file", s_binary, {1}, "binary"),
    Case("missing-file", s_missing, {2}, "no such file"),
    Case("folder-with-files", s_folder_and_file, {2}, "cannot be mixed"),
    Case("same-file-two-globs", s_glob_twice, {0}, "more than once"),
    Case("manifest-not-toml", s_bad_toml, {1}),
    Case("manifest-path-escapes", s_path_escape, {1}, "outside the bundle"),
    Case("manifest-rank-true", s_rank_bool, {1}, "rank"),
    Case("manifest-world-size-2^63", s_world_size_huge, {0, 1}),
    Case("nul-byte-in-dump", s_nul_in_dump, {0}, "1 snapshot"),
    Case("escape-sequences-in-evidence", s_escapes_in_evidence, {0}, check=check_no_escapes),
    Case("stack-5000-frames", s_deep_stack, {0}),
    Case("stack-2000-frames-draft", s_deep_stack_draft, {0}, allowed=("out.md", "out.")),
    Case("init-with-fifo", s_init_with_fifo, {0}, "FIFO", allowed=("ev/bundle.toml",)),
    Case("source-root-fifos", s_source_root_fifo, {0}),
    # outputs
    Case("out-is-fifo", s_out_fifo, {1}, "FIFO", check=check_fifo_kept("out.md")),
    Case("out-is-device", s_out_device, {1}, "device"),
    Case("out-is-symlink", s_out_symlink, {1}, "symbolic link", check=check_link_kept),
    Case("out-is-dev-full-link", s_out_dev_full_link, {1}, "symbolic link"),
    Case("out-is-not-a-report", s_out_not_a_report, {1}, "not a reporter report"),
    Case("out-parent-is-a-file", s_out_parent_is_file, {1}, "cannot create the folder"),
    Case("preview-out-existing-file", s_preview_out_existing, {1}, "not written by reporter"),
    Case("preview-of-fifo", s_preview_fifo, {1}, "FIFO"),
    Case("upstream-draft-out-existing", s_upstream_out_existing, {1}, "not written by reporter"),
    Case(
        "force-twice-keeps-history",
        s_force_twice,
        {0},
        allowed=("r.md", "r.metrics.svg", "r.md.bak", "r.md.bak.1", "r.md.bak.2"),
        check=check_backups,
    ),
    Case(
        "non-ascii-titles-differ",
        s_non_ascii_titles,
        {0},
        allowed=("reports",),
        check=check_two_reports,
    ),
    Case(
        "concurrent-drafts",
        s_concurrent_drafts,
        {0},
        allowed=("r.md", "r.metrics.svg", "r.md.bak", "r.md.bak.1"),
        check=check_race,
        settle=wait_racer,
    ),
    # errors
    Case(
        "index-import-nested-and-10^30",
        s_index_nested_and_huge,
        {0},
        "nested too deeply",
        allowed=("i.sqlite3",),
        check=check_imported,
    ),
    Case("index-import-40k-hex-token", s_index_hex_token, {0}, allowed=("i.sqlite3",), bound=30.0),
    Case("index-import-fifo", s_index_fifo, {1, 2}, "FIFO", allowed=("i.sqlite3",)),
    Case("index-db-corrupt", s_db_corrupt, {1}),
    Case(
        "index-db-locked",
        s_db_locked,
        {1},
        "locked",
        allowed=("i.sqlite3", "edited.jsonl"),
        check=release_lock,
    ),
    Case("front-matter-5000-deep-lint", s_front_matter_deep, {1}, "front matter"),
    Case(
        "front-matter-5000-deep-preview", s_front_matter_deep_preview, {0}, allowed=("deep.html",)
    ),
    Case("yaml-alias-bomb-lint", s_yaml_bomb_lint, {1}, "aliases"),
    Case("yaml-alias-bomb-preview", s_yaml_bomb_preview, {0}, allowed=("bomb.html",)),
    Case("yaml-alias-bomb-status", s_yaml_bomb_status, {0}),
    Case("mermaid-500-edge-chain", s_mermaid_chain, {0}, allowed=("m.html",)),
    Case("lint-fifo", s_lint_fifo, {1}, "FIFO"),
    Case("status-fifo", s_status_fifo, {0}),
    Case("diff-fifo", s_diff_fifo, {1, 2}, "FIFO"),
    Case("upstream-file-bad-base-url", s_upstream_bad_base_url, {1, 2}),
    Case("upstream-file-closed-port", s_upstream_closed_port, {0, 1}),
    # A loaded machine may still be starting the interpreter, which has no handler yet, even
    # seconds in (seen at 2.5 s with the suite at a third of its usual speed): death by SIGINT
    # itself (-2, silent) is what a shell also reports as 130; never a traceback.
    Case("interrupt-at-0.2s", s_interrupt(0.2), {130, -2}, interrupt_after=0.2),
    Case("interrupt-at-1s", s_interrupt(1.0), {130, -2}, interrupt_after=1.0),
    Case("interrupt-at-2.5s", s_interrupt(2.5), {130, -2}, interrupt_after=2.5),
    Case(
        "manifest-html-and-mentions",
        s_manifest_html_mentions,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_inert_report,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path, owned_elsewhere=OWNED_ELSEWHERE)


def test_the_table_covers_every_area() -> None:
    """The issue asks for one row per case: the table keeps at least this many."""
    from .test_round2 import ROUND2

    assert len(CASES) >= 55
    assert len(CASES) + len(ROUND2) >= 90
