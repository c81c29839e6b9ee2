"""The hostile-input table, round 2 (issue 21): secrets in disguise, hostile servers, trees, reports.

Same rules as `test_hostile.py` (`harness.run_case`): no traceback, one `error:` line with a
`Tip:`, the expected exit code, a watchdog bound, nothing changed outside the row's
outputs. Rows that collect start their hostile server on 127.0.0.1 (`servers.py`) or their
target process in the setup and register its end in `harness.CLEANUPS`.

Every secret here is fake, built from parts so no scanner mistakes the file for a real one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .harness import CLEANUPS, ROOT, Case, Outcome, environment, run_case
from .servers import HostileServer

TP_DESYNC = ROOT / "fixtures" / "bundles" / "tp_desync"
DUMP = TP_DESYNC / "snapshots" / "rank0_s0.txt"
GOOD = ROOT / "fixtures" / "bundles" / "full_incident"

# Fake secrets, from parts.
GHP = "ghp_" + "Zq7ownPw81xAbCd1234" + "EfGh5678IjKl9012Mn"
HVS = "hvs." + "CAESIJ4eZq7ownPw81xAbCd1234EfGh5678IjKl9012"
NETRC_PW = "Nr-" + "Zq7ownPw81xAb"
PGPASS_PW = "Pg-" + "Zq7ownPw81xAb"
SENTRY_KEY = "0123456789abcdef" + "fedcba9876543210"
TOKEN = "Xy7" + "zQ1w2e3r4t5y6u7i8o9p0"
ZW = "\u200b"
CYRILLIC_P = "\u0440"
ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e"


def _disguised() -> dict[str, str]:
    """Allow-listed environment names holding secrets, some of them in disguise."""
    return {
        "SGLANG_DOWNLOAD_OPTS": f"machine models.acme.example login svc password {NETRC_PW}",
        "VLLM_DB_SPEC": f"db.acme.internal:5432:runs:svc:{PGPASS_PW}",
        "SGLANG_VAULT_HINT": HVS,
        "SGLANG_ERROR_SINK": f"https://{SENTRY_KEY}@o1.ingest.sentry.io/42",
        "VLLM_MIRROR": GHP[:14] + ZW + GHP[14:],
        "SGLANG_MIRROR": GHP.replace("p", CYRILLIC_P, 1),
        "NCCL_HINT": "".join(chr(ord(c) + 0xFEE0) for c in GHP),
    }


SECRETS = (GHP, HVS, NETRC_PW, PGPASS_PW, SENTRY_KEY, TOKEN)
Check = Callable[[Path, Outcome], None]


def _plain(text: str) -> str:
    """`text` with the disguises of `_disguised` undone (what a reader copies out)."""
    out = text.replace(ZW, "").replace(CYRILLIC_P, "p")
    return "".join(chr(ord(c) - 0xFEE0) if 0xFF01 <= ord(c) <= 0xFF5E else c for c in out)


def check_no_secret(*files: str) -> Check:
    """A check: none of SECRETS in the output or in `files` (disguises undone)."""

    def check(work: Path, outcome: Outcome) -> None:
        texts = [outcome.stdout + outcome.stderr]
        texts += [
            (work / f).read_text("utf-8", errors="replace") for f in files if (work / f).is_file()
        ]
        for text in texts:
            plain = _plain(text)
            for secret in SECRETS:
                assert secret not in plain, f"{secret[:6]}... shown"
                assert secret[4:18] not in plain, f"{secret[:6]}... shown in part"

    return check


def check_inert(*files: str) -> Check:
    """A check: no escape, bidi or zero-width character in the output or in `files`."""

    def check(work: Path, outcome: Outcome) -> None:
        for name in files:
            text = (work / name).read_text("utf-8", errors="replace")
            for bad in ("\x1b", "\x07", "\u202e", "\u200b"):
                assert bad not in text, f"{bad!r} in {name}"
        assert "\x1b" not in outcome.stdout + outcome.stderr

    return check


def bundle(work: Path, name: str = "b") -> Path:
    target = work / name
    shutil.copytree(TP_DESYNC, target)
    return target


def with_environ(work: Path, values: dict[str, str], name: str = "b") -> Path:
    """The tp_desync bundle with an environ file of `values` listed in its manifest."""
    b = bundle(work, name)
    (b / "env").mkdir(exist_ok=True)
    (b / "env" / "rank0.environ").write_text(
        "".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8"
    )
    with (b / "bundle.toml").open("a", encoding="utf-8") as manifest:
        manifest.write('\n[[evidence]]\npath = "env/rank0.environ"\nkind = "environ"\n')
    return b


def set_title(b: Path, title: str) -> None:
    text = (b / "bundle.toml").read_text("utf-8")
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("title = "))
    lines[at] = f"title = {json.dumps(title)}"
    (b / "bundle.toml").write_text("\n".join(lines), encoding="utf-8")


def draft_report(work: Path, source: Path, out: Path) -> None:
    """A real report (setup, not the row under test)."""
    done = subprocess.run(
        [sys.executable, "-m", "reporter", "draft", str(source), "--out", str(out)],
        cwd=work,
        env=environment(work),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# --- secrets ------------------------------------------------------------------------------------


Setup = Callable[[Path], list[str]]


def environ_rows(values: Callable[[], dict[str, str]]) -> tuple[Setup, Setup, Setup]:
    """Setups of `analyze --json`, `draft --out r.md` and `upstream draft --out u.md` on the
    tp_desync bundle with an environ file of `values()`."""

    def as_json(work: Path) -> list[str]:
        return ["analyze", "--json", str(with_environ(work, values()))]

    def report(work: Path) -> list[str]:
        return ["draft", str(with_environ(work, values())), "--out", str(work / "r.md")]

    def upstream(work: Path) -> list[str]:
        b = with_environ(work, values())
        out = str(work / "u.md")
        return ["upstream", "draft", str(b), "--repo", "a/b", "--offline", "--out", out]

    return as_json, report, upstream


s_json_allowlisted, s_report_allowlisted, s_upstream_allowlisted = environ_rows(_disguised)


def s_diff_allowlisted(work: Path) -> list[str]:
    good = work / "good.environ"
    bad = work / "bad.environ"
    # As /proc/PID/environ has them: NUL-separated.
    good.write_text("SGLANG_DOWNLOAD_OPTS=none\x00VLLM_MIRROR=none\x00", encoding="utf-8")
    bad.write_text("".join(f"{k}={v}\x00" for k, v in _disguised().items()), encoding="utf-8")
    return ["diff", str(good), str(bad), "--limit", "50"]


def check_diff_masked_inside(work: Path, outcome: Outcome) -> None:
    check_no_secret()(work, outcome)
    # Masked inside: the readable rest of the value stays (issue 20, step 5).
    assert "machine models.acme.example login svc password [redacted]" in outcome.stdout


def s_title_token_status(work: Path) -> list[str]:
    b = bundle(work)
    set_title(b, f"Hang after rotating {GHP}")
    draft_report(work, b, work / "reports" / "r.md")
    return ["status", str(work / "reports")]


def s_lint_escaped_token(work: Path) -> list[str]:
    report = work / "r.md"
    draft_report(work, DUMP, report)
    text = report.read_text("utf-8").replace(
        "\n# ", f"\n# Hang after rotating {GHP.replace('_', chr(92) + '_')}\n\n# ", 1
    )
    report.write_text(text, encoding="utf-8")
    return ["lint", str(report)]


def s_log_credentials(work: Path) -> list[str]:
    b = bundle(work)
    (b / "logs").mkdir(exist_ok=True)
    (b / "logs" / "server.log").write_text(
        "[2026-12-21 09:10:05] INFO loaded ~/.netrc:\nmachine artifacts.acme.example\n"
        f"    login ci-bot\n    password {NETRC_PW}\n"
        f"[2026-12-21 09:10:06] ERROR psql: db.acme.internal:5432:*:reader:{PGPASS_PW}\n"
        f"[2026-12-21 09:10:07] ERROR jira ATATT3xFfGF0{TOKEN * 4} rejected\n",
        encoding="utf-8",
    )
    with (b / "bundle.toml").open("a", encoding="utf-8") as manifest:
        manifest.write('\n[[evidence]]\npath = "logs/server.log"\nkind = "log"\n')
    return ["draft", str(b), "--out", str(work / "r.md")]


# --- collect against hostile servers ------------------------------------------------------------


def _served(mode: str, **options: object) -> HostileServer:
    server = HostileServer(mode, **options)  # type: ignore[arg-type]
    server.__enter__()
    CLEANUPS.append(server.stop)
    return server


def _collect(work: Path, *extra: str) -> list[str]:
    return ["collect", "--out", str(work / "out"), "--timeout", "2s", *extra]


def s_metrics_trickle(work: Path) -> list[str]:
    server = _served("trickle")
    return _collect(work, "--metrics-url", server.url + "/metrics", "--scrape-for", "0s")


def s_metrics_huge(work: Path) -> list[str]:
    server = _served("huge", size=256 << 20)
    return _collect(
        work, "--metrics-url", server.url + "/metrics", "--scrape-for", "0s", "--max-size", "4M"
    )


def s_metrics_gzip_bomb(work: Path) -> list[str]:
    server = _served("gzip-bomb", size=256 << 20)
    return _collect(
        work, "--metrics-url", server.url + "/metrics", "--scrape-for", "0s", "--max-size", "4M"
    )


def s_metrics_endless(work: Path) -> list[str]:
    server = _served("endless")
    return _collect(
        work, "--metrics-url", server.url + "/metrics", "--scrape-for", "0s", "--max-size", "4M"
    )


def s_debug_trickle(work: Path) -> list[str]:
    return _collect(work, "--torch-debug", _served("trickle").url)


def s_debug_stall(work: Path) -> list[str]:
    return _collect(work, "--torch-debug", _served("stall").url)


def s_debug_unclosed(work: Path) -> list[str]:
    return _collect(work, "--torch-debug", _served("debug-unclosed", size=700 * 1024).url)


def s_debug_secrets_and_escapes(work: Path) -> list[str]:
    text = "\n".join(
        [
            f'  File "serve.py", line 1, in f  # token {GHP}',
            f"  machine api.acme.example login bot password {NETRC_PW}",
            f"  VAULT_TOKEN={HVS} {ESCAPES}",
        ]
    )
    page = "".join(
        f"<h2>Rank {r}: http://127.0.0.1:1/{ESCAPES}</h2>\n<pre>{text}</pre>\n" for r in range(2)
    )
    return _collect(work, "--torch-debug", _served("debug-page", page=page).url)


def check_bundle_clean(work: Path, outcome: Outcome) -> None:
    texts = [outcome.stdout + outcome.stderr]
    for path in sorted((work / "out").rglob("*")):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", errors="replace"))
    for text in texts:
        for secret in SECRETS:
            assert secret not in _plain(text), f"{secret[:6]}... in the bundle"
        for bad in ("\x1b", "\x07", "\u202e"):
            assert bad not in text


def check_manifest_says(*words: str) -> Check:
    def check(work: Path, outcome: Outcome) -> None:
        manifest = (work / "out" / "bundle.toml").read_text("utf-8")
        for word in words:
            assert word in manifest, word

    return check


def s_interrupt_trickle(work: Path) -> list[str]:
    server = _served("trickle")
    return _collect(
        work,
        "--timeout",
        "60s",
        "--metrics-url",
        server.url + "/metrics",
        "--scrape-for",
        "0s",
        "--torch-debug",
        server.url,
    )


def check_interrupted_kept(work: Path, outcome: Outcome) -> None:
    if outcome.signalled:
        manifest = (work / "out" / "bundle.toml").read_text("utf-8")
        assert 'status = "interrupted"' in manifest
    # The watchdog of the row is far below the 60 s deadline the reads were given.
    assert outcome.seconds < 30


def _target(work: Path, argv: list[str], env: dict[str, str]) -> int:
    """A Python process that sleeps (the collection's target), ended by the clean-up."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(0.2)", *argv],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def end() -> None:
        proc.kill()
        proc.wait()

    CLEANUPS.append(end)
    time.sleep(0.3)
    return proc.pid


def s_fr_symlink(work: Path) -> list[str]:
    shared = work / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # a world-writable, sticky folder like /tmp
    (shared / "nccl_trace_rank_0").symlink_to("/proc/self/environ")
    pid = _target(work, [], {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(shared / "nccl_trace_rank_")})
    return _collect(work, "--pid", str(pid), "--snapshots", "1", "--py-spy", "/nonexistent/py-spy")


def check_no_fr_copy(work: Path, outcome: Outcome) -> None:
    assert not list((work / "out").glob("fr/**/*")) or not any(
        p.is_file() for p in (work / "out").glob("fr/**/*")
    )
    manifest = (work / "out" / "bundle.toml").read_text("utf-8")
    assert "symbolic link" in manifest
    for path in (work / "out").rglob("*"):
        if path.is_file():
            assert b"GITHUB_TOKEN" not in path.read_bytes()


def s_fr_huge_file(work: Path) -> list[str]:
    folder = work / "fr"
    folder.mkdir()
    with (folder / "nccl_trace_rank_0").open("wb") as handle:
        handle.truncate(6 << 30)  # 6 GB, sparse: nothing is written to disk
    pid = _target(work, [], {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(folder / "nccl_trace_rank_")})
    return _collect(work, "--pid", str(pid), "--snapshots", "1", "--py-spy", "/nonexistent/py-spy")


def s_fr_foreign_owner(work: Path) -> list[str]:
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    folder = work / "fr"
    folder.mkdir()
    folder.chmod(0o1777)
    dump = folder / "nccl_trace_rank_0"
    dump.write_text('{"version": "2.10", "entries": []}\n', encoding="utf-8")
    os.chown(dump, 65534, 65534)
    pid = _target(work, [], {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(folder / "nccl_trace_rank_")})
    return _collect(work, "--pid", str(pid), "--snapshots", "1", "--py-spy", "/nonexistent/py-spy")


def _fake_pyspy(work: Path, body: str) -> Path:
    script = work / "fake-py-spy"
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def s_pyspy_error_escapes(work: Path) -> list[str]:
    fake = _fake_pyspy(
        work,
        f"sys.stderr.write('Error: {ESCAPES!r}'[1:-1] + ' while reading; --api-key {TOKEN}\\n')\n"
        "sys.exit(1)",
    )
    pid = _target(work, [], {})
    return _collect(work, "--pid", str(pid), "--snapshots", "1", "--py-spy", str(fake))


def s_pyspy_flood(work: Path) -> list[str]:
    fake = _fake_pyspy(
        work,
        "line = 'Thread 1 (idle): \"MainThread\"\\n    f (x.py:1)\\n' * 4096\n"
        "while True:\n    sys.stdout.write(line)",
    )
    pid = _target(work, [], {})
    return _collect(
        work, "--pid", str(pid), "--snapshots", "1", "--py-spy", str(fake), "--max-size", "1M"
    )


def check_flood_capped(work: Path, outcome: Outcome) -> None:
    dumps = [p for p in (work / "out" / "pyspy").glob("*.txt")]
    assert dumps and all(p.stat().st_size <= (1 << 20) + 4096 for p in dumps)


def s_pyspy_header_secrets(work: Path) -> list[str]:
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(pyspy).exists():
        pytest.skip("py-spy is not installed")
    pid = _target(work, ["--api-key", TOKEN, f"--model-path=https://u:{GHP}@hf.example/m"], {})
    return _collect(work, "--pid", str(pid), "--snapshots", "1", "--py-spy", pyspy)


# --- trees --------------------------------------------------------------------------------------


def s_symlink_loop(work: Path) -> list[str]:
    b = bundle(work)
    (b / "snapshots" / "self").symlink_to("self")
    return ["analyze", str(b)]


def _nested(work: Path) -> Path:
    b = bundle(work)
    deep = b / "deep"
    deep.mkdir()
    # One folder at a time relative to the last (mkdir -p of 1,000 levels overruns PATH_MAX).
    fd = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(1000):
            os.mkdir("x", dir_fd=fd)
            inner = os.open("x", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    # pytest removes old temporary folders recursively: flatten this one after the row.
    CLEANUPS.append(lambda: _remove_nested(deep))
    return b


def _remove_nested(top: Path) -> None:
    """Remove a chain of `x` folders one level at a time, with short paths only."""
    child = top / "x"
    while child.is_dir():
        grand = child / "x"
        if grand.is_dir():
            grand.rename(top / "x.next")
            child.rmdir()
            (top / "x.next").rename(child)
        else:
            child.rmdir()


def s_nested_analyze(work: Path) -> list[str]:
    return ["analyze", str(_nested(work))]


def s_nested_draft(work: Path) -> list[str]:
    return ["draft", str(_nested(work)), "--out", str(work / "r.md")]


def s_nested_upstream(work: Path) -> list[str]:
    b = _nested(work)
    return ["upstream", "draft", str(b), "--repo", "a/b", "--offline", "--out", str(work / "u.md")]


def s_glob_matches_folder(work: Path) -> list[str]:
    b = bundle(work)
    (b / "snapshots" / "rank9_folder").mkdir()
    with (b / "bundle.toml").open("a", encoding="utf-8") as manifest:
        manifest.write('\n[[evidence]]\npath = "snapshots/rank*"\nkind = "pyspy-text"\n')
    return ["analyze", str(b)]


def s_glob_only_folders(work: Path) -> list[str]:
    b = bundle(work)
    (b / "extra").mkdir()
    with (b / "bundle.toml").open("a", encoding="utf-8") as manifest:
        manifest.write('\n[[evidence]]\npath = "ext*"\nkind = "pyspy-text"\n')
    return ["analyze", str(b)]


# --- reports ------------------------------------------------------------------------------------


def _bad_report(work: Path, key: str, value: str, name: str = "bad.md") -> Path:
    folder = work / "reports"
    good = folder / "good.md"
    if not good.exists():
        draft_report(work, DUMP, good)
    text = good.read_text("utf-8")
    bad = folder / name
    bad.write_text(
        text.replace("kind: incident-report", f"kind: incident-report\n{key}: {value}", 1)
    )
    return bad


def s_date_lint(work: Path) -> list[str]:
    return ["lint", str(_bad_report(work, "incident_end", "2026-02-30"))]


def s_date_status(work: Path) -> list[str]:
    _bad_report(work, "incident_end", "2026-02-30")
    return ["status", str(work / "reports")]


def s_date_preview(work: Path) -> list[str]:
    return ["preview", str(_bad_report(work, "incident_end", "2026-02-30")), "--out", "p.html"]


def s_date_draft(work: Path) -> list[str]:
    _bad_report(work, "incident_end", "2026-02-30")
    return ["draft", str(DUMP), "--out", str(work / "new.md"), "--reports", str(work / "reports")]


def s_huge_int_lint(work: Path) -> list[str]:
    return ["lint", str(_bad_report(work, "big", "9" * 100_000))]


def s_huge_int_status(work: Path) -> list[str]:
    _bad_report(work, "big", "9" * 100_000)
    return ["status", str(work / "reports")]


def check_status_lists_both(work: Path, outcome: Outcome) -> None:
    assert "good.md" in outcome.stdout and "bad.md" in outcome.stdout


def s_lint_names_the_bad_file(work: Path) -> list[str]:
    bad = _bad_report(work, "incident_end", "2026-02-30", name="zz-bad.md")
    return ["lint", str(work / "reports" / "good.md"), str(bad)]


def check_lint_blames_bad(work: Path, outcome: Outcome) -> None:
    lines = [line for line in outcome.stdout.splitlines() if "2026-02-30" in line]
    assert lines and all("zz-bad.md" in line for line in lines)


# --- evidence into documents --------------------------------------------------------------------


def s_title_escapes_report(work: Path) -> list[str]:
    b = bundle(work)
    set_title(b, f"Hang {ESCAPES} cc @octocat {ZW}here")
    return ["draft", str(b), "--out", str(work / "r.md")]


def s_frame_escapes_report(work: Path) -> list[str]:
    text = DUMP.read_text("utf-8").replace("all_reduce", f"all_reduce{ESCAPES}", 1)
    dump = work / "d.txt"
    dump.write_text(text, encoding="utf-8")
    return ["draft", str(dump), "--out", str(work / "r.md")]


def s_upstream_title_inert(work: Path) -> list[str]:
    b = bundle(work)
    set_title(b, f"Hang {RLO_TEXT} cc @octocat {ZW}here fixes #12")
    return ["upstream", "draft", str(b), "--repo", "a/b", "--offline", "--out", str(work / "u.md")]


RLO_TEXT = "\u202eevil\u202c"


def check_upstream_title(work: Path, outcome: Outcome) -> None:
    text = (work / "u.md").read_text("utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title: "))
    # The upstream title is written from the evidence (engine, mode, who waits where), never
    # from the bundle's own title; wherever the bundle's title might surface in the draft,
    # it must stay inert: no bidi or zero-width character, no live mention or issue link.
    assert "evil" not in title and "octocat" not in title
    assert "\u202e" not in text and ZW not in text
    assert " @octocat" not in text and "\n@octocat" not in text
    assert " #12" not in text


def s_form_summary_360k(work: Path) -> list[str]:
    forms = work / "forms" / ".github" / "ISSUE_TEMPLATE"
    forms.mkdir(parents=True)
    value = "<summary>x\n" * (360 * 1024 // 11)
    form = {
        "name": "Bug",
        "description": "A bug.",
        "body": [
            {"type": "textarea", "id": "bug", "attributes": {"label": "Describe the bug"}},
            {
                "type": "textarea",
                "id": "environment",
                "attributes": {"label": "Environment", "value": value},
            },
        ],
    }
    (forms / "bug.yml").write_text(json.dumps(form), encoding="utf-8")
    return [
        "upstream",
        "draft",
        str(DUMP),
        "--repo",
        "a/b",
        "--offline",
        "--forms",
        str(work / "forms"),
        "--out",
        str(work / "u.md"),
    ]


ROUND2 = [
    # secrets under harmless names, in disguise, in titles and logs
    Case("secret-allowlisted-json", s_json_allowlisted, {0}, check=check_no_secret()),
    Case(
        "secret-allowlisted-report",
        s_report_allowlisted,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_no_secret("r.md"),
    ),
    Case(
        "secret-allowlisted-upstream",
        s_upstream_allowlisted,
        {0},
        allowed=("u.md",),
        check=check_no_secret("u.md"),
    ),
    Case("secret-allowlisted-diff", s_diff_allowlisted, {0}, check=check_diff_masked_inside),
    Case("secret-in-title-status", s_title_token_status, {0}, check=check_no_secret()),
    Case("secret-markdown-escaped-lint", s_lint_escaped_token, {1}, "possible GitHub token"),
    Case(
        "secret-log-netrc-pgpass-atlassian",
        s_log_credentials,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_no_secret("r.md"),
    ),
    # collect against hostile servers
    Case(
        "collect-metrics-trickle",
        s_metrics_trickle,
        {1},
        "no complete answer within 2 s",
        allowed=("out",),
        bound=40.0,
        check=check_manifest_says("2 s per request"),
        progress=True,
    ),
    Case(
        "collect-metrics-huge",
        s_metrics_huge,
        {1},
        "cap",
        allowed=("out",),
        bound=40.0,
        progress=True,
    ),
    Case(
        "collect-metrics-gzip-bomb",
        s_metrics_gzip_bomb,
        {1},
        "cap",
        allowed=("out",),
        bound=40.0,
        progress=True,
    ),
    Case(
        "collect-metrics-endless",
        s_metrics_endless,
        {1},
        "cap",
        allowed=("out",),
        bound=40.0,
        progress=True,
    ),
    Case(
        "collect-debug-trickle",
        s_debug_trickle,
        {1},
        "no complete answer",
        allowed=("out",),
        bound=40.0,
        progress=True,
    ),
    Case("collect-debug-stall", s_debug_stall, {1}, allowed=("out",), bound=40.0, progress=True),
    Case(
        "collect-debug-unclosed-700k",
        s_debug_unclosed,
        {1},
        "no per-rank block",
        allowed=("out",),
        bound=40.0,
        progress=True,
    ),
    Case(
        "collect-debug-secrets-escapes",
        s_debug_secrets_and_escapes,
        {0},
        allowed=("out",),
        check=check_bundle_clean,
        progress=True,
    ),
    Case(
        "collect-interrupt-once",
        s_interrupt_trickle,
        {130},
        allowed=("out",),
        interrupt_after=6.0,
        bound=40.0,
        check=check_interrupted_kept,
        progress=True,
    ),
    Case(
        "collect-fr-symlink-to-environ",
        s_fr_symlink,
        {1},
        allowed=("out",),
        env={"GITHUB_TOKEN": GHP},
        check=check_no_fr_copy,
        progress=True,
    ),
    Case(
        "collect-fr-6gb-file",
        s_fr_huge_file,
        {1},
        allowed=("out",),
        check=check_manifest_says("larger than the 64.0 MiB cap"),
        progress=True,
    ),
    Case(
        "collect-fr-foreign-owner",
        s_fr_foreign_owner,
        {1},
        allowed=("out",),
        check=check_manifest_says("owned by uid 65534"),
        progress=True,
    ),
    Case(
        "collect-pyspy-error-escapes",
        s_pyspy_error_escapes,
        {1},
        allowed=("out",),
        check=check_bundle_clean,
        progress=True,
    ),
    Case(
        "collect-pyspy-flood",
        s_pyspy_flood,
        {1},
        "more than 1.0 MiB",
        allowed=("out",),
        check=check_flood_capped,
        progress=True,
    ),
    Case(
        "collect-pyspy-header-secrets",
        s_pyspy_header_secrets,
        {0},
        allowed=("out",),
        check=check_bundle_clean,
        progress=True,
    ),
    # trees
    Case("bundle-symlink-loop", s_symlink_loop, {0}, "loops"),
    Case("bundle-1000-nested-analyze", s_nested_analyze, {0}, "deeper than 64"),
    Case("bundle-1000-nested-draft", s_nested_draft, {0}, allowed=("r.md", "r.metrics.svg")),
    Case("bundle-1000-nested-upstream", s_nested_upstream, {0}, allowed=("u.md",)),
    Case("manifest-glob-matches-a-folder", s_glob_matches_folder, {0}),
    Case("manifest-glob-matches-only-folders", s_glob_only_folders, {1}, "matches only folders"),
    # reports
    Case("front-matter-2026-02-30-lint", s_date_lint, {1}, "not a real date"),
    Case("front-matter-2026-02-30-status", s_date_status, {0}, check=check_status_lists_both),
    Case("front-matter-2026-02-30-preview", s_date_preview, {0}, allowed=("p.html",)),
    Case("front-matter-2026-02-30-draft", s_date_draft, {0}, allowed=("new.md", "new.")),
    Case("front-matter-100k-digit-int-lint", s_huge_int_lint, {1}, "integer"),
    Case(
        "front-matter-100k-digit-int-status", s_huge_int_status, {0}, check=check_status_lists_both
    ),
    Case("lint-names-the-bad-file", s_lint_names_the_bad_file, {1}, check=check_lint_blames_bad),
    # evidence made inert in every document
    Case(
        "title-escapes-local-report",
        s_title_escapes_report,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_inert("r.md"),
    ),
    Case(
        "frame-escapes-local-report",
        s_frame_escapes_report,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_inert("r.md"),
    ),
    Case(
        "upstream-title-bidi-mention",
        s_upstream_title_inert,
        {0},
        allowed=("u.md",),
        check=check_upstream_title,
    ),
    Case(
        "issue-form-summary-360k",
        s_form_summary_360k,
        {0},
        allowed=("u.md",),
        bound=30.0,
    ),
]


@pytest.mark.parametrize("case", ROUND2, ids=[c.id for c in ROUND2])
def test_hostile_round2(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_round2_names_are_unique() -> None:
    from .test_hostile import CASES

    ids = [c.id for c in CASES + ROUND2]
    assert len(ids) == len(set(ids))
