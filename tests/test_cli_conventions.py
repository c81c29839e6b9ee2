"""What users of gh and pip-audit expect from a command line: one-line usage errors,
global flags anywhere, quiet broken pipes, stdin, completion, versions, no colour in pipes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter import console
from reporter.analysis import Similarity
from reporter.cli import SimilarityName, cli, hoist_globals

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
TP_DESYNC = ROOT / "fixtures" / "bundles" / "tp_desync"
DUMP = """\
Process 11: sglang::scheduler_TP0
Python v3.11.7 (/usr/local/bin/python3.11)

Thread 11 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)
"""
runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "--similarity", "fuzzy", "x"], "error: Invalid value for '--similarity'"),
        (["analyze", "--jsn", "x"], "error: No such option: --jsn"),
        (["analyze"], "error: Missing argument 'EVIDENCE'."),
        (["analyse", "x"], "error: No such command 'analyse'."),
    ],
)
def test_usage_errors_are_one_line_and_a_tip(args: list[str], message: str) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(message), lines
    assert lines[1].startswith("Tip: `report") and "--help" in lines[1]
    assert len(lines) == 2
    assert not any(box in result.stderr for box in "╭│╰─")


def test_global_flags_after_the_subcommand() -> None:
    assert hoist_globals(["analyze", "x", "--debug"], {"analyze": None}) == [
        "--debug",
        "analyze",
        "x",
    ]
    # After `--` it is an argument, not a flag.
    assert hoist_globals(["analyze", "--", "--debug"], {"analyze": None}) == [
        "analyze",
        "--",
        "--debug",
    ]
    plain = runner.invoke(cli, ["analyze", "/no/such/file"])
    assert plain.exit_code == 2 and plain.exception is not None
    assert isinstance(plain.exception, SystemExit)
    debug = runner.invoke(cli, ["analyze", "/no/such/file", "--debug"])
    # --debug after the command still means "show the traceback": the error propagates.
    assert type(debug.exception).__name__ == "UsageError"


def test_no_color_flag_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    result = runner.invoke(cli, ["status", str(ROOT / "no-such-dir"), "--no-color"])
    assert result.exit_code == 2
    assert os.environ.get("NO_COLOR") == "1"


def test_broken_pipe_is_a_quiet_success(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    for n in range(1500):
        (reports / f"r{n:04d}.md").write_text(
            f"---\nkind: incident-report\nstatus: draft\nowners: [sre]\n---\n# Report {n}\n"
        )
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m reporter status {reports} | head -1"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1


def test_analyze_reads_a_pasted_dump_from_stdin() -> None:
    result = runner.invoke(cli, ["analyze", "-"], input=DUMP)
    assert result.exit_code == 0, result.output
    assert "all_reduce" in result.stdout
    empty = runner.invoke(cli, ["analyze", "-"], input="")
    assert empty.exit_code == 2 and "stdin is empty" in empty.stderr


def test_version_names_python_and_pyspy() -> None:
    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("hangreport ") and lines[0].endswith("(import reporter)")
    assert lines[1] == f"Python {sys.version.split()[0]} ({sys.executable})"
    assert lines[2].startswith("py-spy")


def test_shell_completion_is_typers_own() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reporter"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "_REPORT_COMPLETE": "complete_bash",
            "COMP_WORDS": "report search-up",
            "COMP_CWORD": "1",
        },
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.split() == ["search-upstream"]
    shown = runner.invoke(cli, ["--help"])
    assert "--install-completion" in shown.stdout


def test_similarity_choices_match_the_analysis_enum() -> None:
    assert [s.value for s in SimilarityName] == [s.value for s in Similarity]


def test_progress_is_plain_when_piped_or_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert console.fancy(Tty()) is True
    assert console.fancy(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert console.fancy(Tty()) is False
    lines: list[str] = []
    with console.progress_bars(lines.append) as (line, tick):
        assert tick is None  # stderr is not a terminal under pytest
        line("step")
    assert lines == ["step"]


def test_help_has_an_example_and_keeps_brackets() -> None:
    result = runner.invoke(cli, ["collect", "--help"])
    assert "Example: report collect" in result.stdout
    assert "`[wedge] window`" in result.stdout
    assert "<bool>" not in result.stdout and "<str>" not in result.stdout
