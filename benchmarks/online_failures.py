"""Print what every online command says when GitHub fails: exit code and first line.

    python benchmarks/online_failures.py

Each command runs as a subprocess (a private cache, config and token-free environment,
as the hostile suite's harness sets up) against a local server on 127.0.0.1 that fails
one way (`tests/hostile/github_servers.py`): unreachable (port 1, refused), 500 on
every request, garbage instead of JSON, and a rate limit that resets in an hour. Issue
22's rule: a result that could not be computed is a failure (non-zero exit, one line
and a Tip), never an empty result. `upstream draft` is the exception by design: it
works with no network (the shipped, cached or generic form, said in a note).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The hostile suite's server and harness (tests/hostile), imported as mypy and pytest name them.
sys.path.insert(0, str(ROOT / "tests"))

from hostile.github_servers import HostileGitHub  # noqa: E402
from hostile.harness import run_cli  # noqa: E402

BUNDLE = ROOT / "fixtures" / "bundles" / "tp_desync"
FAILURES = {"unreachable": "ok", "500": "500", "garbage": "garbage", "rate limit": "rate-limit"}


def commands(work: Path, url: str) -> dict[str, list[str]]:
    query = work / "q.txt"
    query.write_text("hang in all_reduce from check_hicache_events\n", encoding="utf-8")
    bundle = work / "b"
    if not bundle.exists():
        shutil.copytree(BUNDLE, bundle)
    return {
        "sync": ["sync", "a/b", "--no-fixed-in", "--base-url", url],
        "search-upstream --online": [
            "search-upstream", "--online", "--repo", "a/b", "--text-file", str(query),
            "--base-url", url,
        ],
        "triage --post": ["triage", "a/b#1", "--post", "--base-url", url, "--db", str(work / "t.sqlite3")],
        "upstream draft": ["upstream", "draft", str(bundle), "--repo", "a/b", "--base-url", url,
                           "-o", str(work / "d.md")],
        "upstream file (dry run)": ["upstream", "file", str(bundle), "--repo", "a/b",
                                    "--base-url", url],
        "auth status": ["auth", "status", "--base-url", url],
    }  # fmt: skip


def first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else "")[:150]


def main() -> None:
    print("| command | failure | exit | first line (stderr, else stdout) |")
    print("|---|---|---|---|")
    for failure, mode in FAILURES.items():
        server = HostileGitHub(mode).start()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                url = "http://127.0.0.1:1" if failure == "unreachable" else server.url
                # triage --post needs the issue in the index first.
                # Two alike issues: #2 is a likely duplicate of #1, so --post has to post.
                issue = '{{"repo": "a/b", "number": {n}, "title": "{t}", "body": "{t}", "state": "open"}}\n'
                title = "scheduler hangs in all_reduce from check_hicache_events writing_check"
                (work / "i.jsonl").write_text(
                    issue.format(n=1, t=title) + issue.format(n=2, t=title), encoding="utf-8"
                )
                run_cli(
                    ["index", "import", str(work / "i.jsonl"), "--db", str(work / "t.sqlite3")],
                    work=work,
                    timeout=60,
                )
                hosts = work / ".config" / "gh" / "hosts.yml"
                hosts.parent.mkdir(parents=True, exist_ok=True)
                hosts.write_text(
                    f'"{url.removeprefix("http://")}":\n  oauth_token: t\n', encoding="utf-8"
                )
                for name, args in commands(work, url).items():
                    done = run_cli(args, work=work, timeout=120)
                    said = first_line(done.stderr) or first_line(done.stdout)
                    print(f"| `{name}` | {failure} | {done.code} | {said.replace('|', '/')} |")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
