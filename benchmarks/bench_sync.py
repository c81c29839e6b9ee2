"""What a sync costs in GitHub API calls, against the GitHub-like server of the tests.

Serves `--issues` issues for one repo from `tests/upstream/ghserver.py` (real sockets on
127.0.0.1, Link pagination, ETags) and counts the requests of:

1. a full first sync (expected: ceil(N / 100) listing pages);
2. the first resync with no change (one request: the boundary issue comes back, since
   GitHub's `since` is inclusive, and its single-page listing gives the ETag to keep);
3. every later no-change resync (one conditional request, answered 304, which GitHub
   does not count against the rate limit);
4. a resync after one issue changed (one request).

    python benchmarks/bench_sync.py [--issues 2500]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reporter.upstream.github import GitHubClient, Token
from reporter.upstream.index import Index
from reporter.upstream.sync import sync_repo

ROOT = Path(__file__).resolve().parents[1]
REPO = "sgl-project/sglang"


def _server_module() -> Any:
    """tests/upstream/ghserver.py, loaded by path (the tests are not a package to import)."""
    spec = importlib.util.spec_from_file_location(
        "ghserver", ROOT / "tests" / "upstream" / "ghserver.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ghserver"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=2500)
    args = parser.parse_args(argv)

    server = _server_module().GitHubServer()
    for number in range(1, args.issues + 1):
        server.add_issue(
            REPO,
            number,
            title=f"issue {number}",
            body="scheduler hang " * 20,
            updated_at=f"2025-{1 + number % 12:02d}-{1 + number % 28:02d}T00:00:{number % 60:02d}Z",
        )
    server.start()
    rows: list[tuple[str, int, int, float]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "sync.sqlite3") as index:
            client = GitHubClient(base_url=server.url, token=Token(value="x", source="bench"))

            def step(label: str) -> None:
                before = server.count("/issues", 304)
                started = time.perf_counter()
                report = sync_repo(index, client, REPO)
                elapsed = time.perf_counter() - started
                rows.append(
                    (label, report.requests, server.count("/issues", 304) - before, elapsed)
                )

            step("full sync")
            step("resync, no change (1st)")
            step("resync, no change")
            server.add_issue(REPO, 7, title="edited", updated_at="2026-01-01T00:00:00Z")
            step("resync, 1 issue changed")
            stored = index.count([REPO])
            client.close()
    finally:
        server.stop()
    print(f"{args.issues} issues in {REPO}; {stored} indexed")
    print(f"{'step':<26} {'requests':>8} {'304s':>5} {'seconds':>8}")
    for label, requests, not_modified, elapsed in rows:
        print(f"{label:<26} {requests:>8} {not_modified:>5} {elapsed:>8.2f}")
    expected = math.ceil(args.issues / 100)
    ok = rows[0][1] == expected and all(r[1] == 1 for r in rows[1:]) and rows[2][2] == 1
    print(f"expected: full sync {expected} requests (ceil(N/100)); each resync 1 request")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
