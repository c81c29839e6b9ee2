"""Shared pytest options and fixtures.

`--update-golden` rewrites golden files on purpose; `ptrace_problem` tells live tests
why py-spy cannot dump here, so they skip with a reason instead of failing. Hypothesis runs
with the deterministic `suite` profile. Every test runs
under the hermetic guard (tests/hermetic.py): touching `reports/`, the user's home, config
or cache, or anything outside the repo, its tmp dirs and the installed packages fails it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import hermetic
import pytest
from hypothesis import settings

# Property tests are deterministic in the suite and in CI: a seed derived from each test
# (derandomize) and no examples database (a fresh clone has none, so CI could not replay
# one). Inputs they once found stay as `@example`s on the test. Searching for new cases is
# `benchmarks/fuzz_parsers.py` (random seeds), or `pytest --hypothesis-profile explore`.
settings.register_profile("suite", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("suite")

ROOT = Path(__file__).resolve().parents[1]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.md from the current renderer instead of comparing",
    )


def pytest_configure(config: pytest.Config) -> None:
    hermetic.install(config, ROOT)


# Variables that would point code under test at the user's own settings, tokens or host.
USER_VARIABLES = (
    "REPORTER_CONFIG",
    "GH_CONFIG_DIR",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GH_HOST",
    "GITHUB_API_URL",
)


@pytest.fixture(scope="session", autouse=True)
def private_user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point HOME and the user cache, config and data folders at a temporary folder for the
    run, and hide the user's settings file, gh config and tokens.

    Code under test keeps indexes in the user cache (platformdirs) and finds gh's
    `hosts.yml` under HOME; without this a test would read whatever the user or another
    checkout left there, and write into it. The hermetic guard sees only this process;
    subprocesses (the CLI, py-spy, pip) inherit this HOME instead.
    """
    home = tmp_path_factory.mktemp("user-dirs")
    names = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for name in names:
            patch.setenv(name, str(home / name.lower()))
        for name in USER_VARIABLES:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture
def tmp_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test from its tmp folder: the commands' default paths (`reports/` looked
    through for earlier reports, `reports/<date>-<slug>.md` written) then lie in tmp, never
    in the checkout, where the Quickstart's first command leaves a report. For test files
    that pass absolute paths: `pytestmark = pytest.mark.usefixtures("tmp_cwd")`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


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
