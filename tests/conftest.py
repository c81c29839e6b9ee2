"""Shared pytest options and fixtures.

`--update-golden` rewrites golden files on purpose; `ptrace_problem` tells live tests
why py-spy cannot dump here, so they skip with a reason instead of failing.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.md from the current renderer instead of comparing",
    )


@pytest.fixture(scope="session", autouse=True)
def private_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point the user cache, config and data folders at a temporary folder for the run.

    Code under test keeps indexes in the user cache (platformdirs); without this a test
    would read whatever another checkout or version left there, and write into it.
    """
    home = tmp_path_factory.mktemp("user-dirs")
    names = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
    with pytest.MonkeyPatch.context() as patch:
        for name in names:
            patch.setenv(name, str(home / name.lower()))
        yield


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def _ptrace_problem(pyspy: str) -> str | None:
    """Why py-spy cannot dump a child here, or None when it can."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while True:
            done = subprocess.run(
                [pyspy, "dump", "--pid", str(child.pid)],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            if "Permission Denied" in done.stderr:
                return f"ptrace is not permitted: {done.stderr.strip().splitlines()[0]}"
            # Right after exec the interpreter may not be found yet: retry briefly.
            if done.returncode == 0 or time.monotonic() > deadline:
                return None
            time.sleep(0.2)
    finally:
        child.kill()
        child.wait()


@pytest.fixture(scope="session")
def ptrace_problem() -> Callable[[str], str | None]:
    """`ptrace_problem(pyspy_path)`: the reason py-spy cannot dump here, or None."""
    return _ptrace_problem
