"""The hermetic guard (tests/hermetic.py) fails a test that touches files outside its bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import hermetic
import pytest

ROOT = Path(__file__).resolve().parents[1]
HOME = "/home/someone"
BOUNDS = hermetic.Bounds.for_repo(ROOT, home=HOME)


@pytest.mark.parametrize(
    ("path", "write", "problem"),
    [
        (ROOT / "reports" / "tp_desync.md", False, "not a fixture"),
        (ROOT / "reports", False, "not a fixture"),
        (ROOT / "artifacts" / "x", True, "not a fixture"),
        (Path(HOME) / ".ssh" / "id_ed25519", False, "the user's own files"),
        (Path(HOME) / ".config" / "reporter" / "config.toml", False, "the user's own files"),
        (Path(HOME) / ".cache" / "reporter" / "upstream-issues.sqlite3", True, "user's own"),
        (Path(HOME) / "notes.txt", False, "outside the repo"),
        (Path("/srv/data/dump.txt"), False, "outside the repo"),
        (ROOT / "tests" / "golden" / "tp_desync.md", True, "tests write only in their tmp"),
        (ROOT / "fixtures" / "bundles" / "tp_desync" / "bundle.toml", False, None),
        (ROOT / "reporter" / "__pycache__" / "x.pyc", True, None),
        (ROOT / ".hypothesis" / "examples" / "x", True, None),
        (Path("/tmp") / "pytest-of-root" / "x", True, None),
        (Path("/proc/self/status"), False, None),
        (Path("/run/sshd"), True, None),
        (Path("/run/other"), True, "tests write only in their tmp"),
        (Path("/etc/passwd"), False, None),
        (Path(sys.base_prefix) / "lib", False, None),
        (Path(hermetic.__file__), False, None),
    ],
)
def test_bounds(path: Path, write: bool, problem: str | None) -> None:
    found = BOUNDS.problem(os.path.normpath(path), write=write)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found, found


def test_update_golden_opens_the_repo_but_never_reports() -> None:
    bounds = hermetic.Bounds.for_repo(ROOT, home=HOME, repo_writable=True)
    assert bounds.problem(str(ROOT / "tests" / "golden" / "x.md"), write=True) is None
    assert bounds.problem(str(ROOT / "reports" / "x.md"), write=True) is not None


def test_events_name_their_paths() -> None:
    guard = hermetic.Guard(BOUNDS)
    reports = str(ROOT / "reports")
    assert guard.check("open", (reports + "/a.md", "r", os.O_RDONLY)) is not None
    assert guard.check("os.scandir", (reports,)) is not None
    assert guard.check("glob.glob", (reports + "/*.md", False)) is not None
    assert guard.check("glob.glob/2", ("*.md", False, reports, None)) is not None
    assert guard.check("os.rename", ("/tmp/a", reports + "/a.md", None, None)) is not None
    # A path relative to a directory fd: the event does not say where the fd points.
    assert guard.check("os.mkdir", ("x", 0o777, 5)) is None
    assert guard.check("open", ("x", None, os.O_RDONLY)) is None
    # An fd, and `/` opened as a folder to walk down from with openat, are fine.
    assert guard.check("os.scandir", (3,)) is None
    assert guard.check("open", ("/", None, os.O_RDONLY | os.O_DIRECTORY)) is None
    assert guard.check("open", (HOME, None, os.O_RDONLY | os.O_DIRECTORY)) is not None
    assert guard.check("compile", (b"", "x")) is None


def test_the_guard_is_on_in_this_test(tmp_path: Path) -> None:
    guard = hermetic.current()
    assert guard.active
    with guard.expect_violation() as seen:
        with pytest.raises(hermetic.HermeticError, match="reports"):
            (ROOT / "reports" / "tp_desync.md").read_text(encoding="utf-8")
        with pytest.raises(PermissionError):
            list((ROOT / "reports").iterdir())
        with pytest.raises(PermissionError):
            (ROOT / "new-file.txt").write_text("x", encoding="utf-8")
    assert len(seen) == 3 and "not a fixture" in seen[0] and "wrote" in seen[2]
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    assert (tmp_path / "ok.txt").read_text(encoding="utf-8") == "fine"


def test_subprocesses_get_a_tmp_home() -> None:
    assert os.environ["HOME"] != hermetic.current().bounds.root
    assert not hermetic.current().bounds.problem(os.environ["HOME"] + "/x", write=True)
    assert "GH_TOKEN" not in os.environ and "REPORTER_CONFIG" not in os.environ


def test_a_test_reading_reports_fails_in_a_real_session(tmp_path: Path) -> None:
    """A pytest session with the guard: the test that reads `reports/` fails, naming it."""
    project = tmp_path / "project"
    (project / "reports").mkdir(parents=True)
    (project / "reports" / "old.md").write_text("# earlier\n", encoding="utf-8")
    (project / "conftest.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            sys.path.insert(0, {str(ROOT / "tests")!r})
            import hermetic

            def pytest_configure(config):
                hermetic.install(config, Path(__file__).parent)
            """
        ),
        encoding="utf-8",
    )
    (project / "test_inner.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            def test_reads_reports():
                try:
                    Path("reports/old.md").read_text()
                except PermissionError:
                    pass  # swallowing the error does not save the test

            def test_reads_its_tmp(tmp_path):
                (tmp_path / "a").write_text("x")
                assert (tmp_path / "a").read_text() == "x"
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(project)],
        cwd=project,
        # The outer run's options (PYTEST_ADDOPTS names its own files) are not the inner's.
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert f"read {project / 'reports' / 'old.md'} (not a fixture) [open]" in done.stdout
    assert "FAILED test_inner.py::test_reads_reports" in done.stdout
