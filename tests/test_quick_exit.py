"""`report analyze` ends its process without the interpreter's teardown (`cli/quickexit.py`):
the output is whole, the exit handlers run, the objects it built are not freed one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "fixtures" / "bundles" / "tp_desync"

# Marks the two ways out: an exit handler (runs either way) and a finaliser of an object
# still alive at exit (runs only when the interpreter tears everything down).
SCRIPT = """
import atexit, sys
from pathlib import Path
out = Path(sys.argv[1])
atexit.register(lambda: (out / "atexit").write_text("ran"))
class Kept:
    def __del__(self):
        (out / "teardown").write_text("ran")
KEPT = Kept()
sys.argv = ["report", *sys.argv[2:]]
from reporter.cli import main
main()
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", SCRIPT, str(tmp_path), *args]
    config = {"REPORTER_CONFIG": str(tmp_path / "config.toml")}
    with subprocess.Popen(
        command, stdout=PIPE, stderr=PIPE, text=True, cwd=tmp_path, env=os.environ | config
    ) as child:
        out, err = child.communicate(timeout=120)
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def test_analyze_leaves_without_teardown(tmp_path: Path) -> None:
    done = _run(tmp_path, "analyze", "--json", str(BUNDLE))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["verdict"]  # the whole document, flushed
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()


def test_draft_leaves_without_teardown_and_its_report_is_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    done = _run(tmp_path, "draft", str(BUNDLE), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["path"] == str(out)
    # The last region of the report is closed: the file was written whole before the exit.
    assert out.read_text(encoding="utf-8").rstrip().endswith("-->")
    # No temporary file of the atomic write is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atexit", "r.md"]
    assert (tmp_path / "atexit").read_text() == "ran"
    assert not (tmp_path / "teardown").exists()


def test_its_exit_code_is_kept(tmp_path: Path) -> None:
    done = _run(tmp_path, "analyze", str(tmp_path / "missing"))
    assert done.returncode == 2 and "no such file" in done.stderr
    assert (tmp_path / "atexit").read_text() == "ran"


def test_other_commands_exit_the_usual_way(tmp_path: Path) -> None:
    done = _run(tmp_path, "--version")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "atexit").exists() and (tmp_path / "teardown").exists()
