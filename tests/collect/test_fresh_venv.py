"""Live, opt-in: `pip install .` (no extras) into a fresh venv, then `report collect` by the
venv's path (not activated, not on PATH) against a real gloo hang.

Building the venv downloads every dependency (two minutes here), so the test uses one made
beforehand and named by `REPORTER_FRESH_VENV`:

    python3 -m venv /tmp/fresh && /tmp/fresh/bin/pip install .
    REPORTER_FRESH_VENV=/tmp/fresh PYTHONPATH=$PWD python -m pytest tests/collect/test_fresh_venv.py

It checks that py-spy came with the install and is found beside the venv's interpreter,
and that with py-spy taken away the run ends `incomplete`, exit 1, with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .servers import scenario

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _collect(venv: Path, out: Path, launcher: int) -> tuple[int, dict[str, object], str]:
    done = subprocess.run(
        [
            str(venv / "bin" / "report"),
            "collect",
            "-o",
            str(out),
            "--match",
            "sglang::scheduler_TP",
            "--children-of",
            str(launcher),
            "--snapshots",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        # Not activated: PATH has neither the venv nor the dev environment.
        env={"PATH": "/usr/bin:/bin", "HOME": str(out.parent), "LC_ALL": "C.UTF-8"},
    )
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def test_a_fresh_install_collects_stacks(
    tmp_path: Path, ptrace_problem: Callable[[str], str | None]
) -> None:
    venv = Path(os.environ.get("REPORTER_FRESH_VENV", ""))
    if not venv.name or not (venv / "bin" / "report").is_file():
        pytest.skip("set REPORTER_FRESH_VENV to a venv with `pip install .` done (see docstring)")
    pyspy = venv / "bin" / "py-spy"
    assert pyspy.is_file(), "py-spy is a dependency: `pip install .` must bring it"
    problem = ptrace_problem(str(pyspy))
    if problem:
        pytest.skip(problem)
    with scenario("tp_desync") as hang:
        code, document, stderr = _collect(venv, tmp_path / "with", hang.launcher)
        assert code == 0, stderr
        assert document["status"] == "complete" and document["dumps_ok"] == 4
        hidden = pyspy.with_name("py-spy.hidden")
        pyspy.rename(hidden)
        try:
            code, document, stderr = _collect(venv, tmp_path / "without", hang.launcher)
        finally:
            hidden.rename(pyspy)
    assert code == 1
    assert document["status"] == "incomplete" and document["dumps_ok"] == 0
    reasons = document["missing_stacks"]
    assert isinstance(reasons, list) and len(reasons) == 4
    assert all(f"py-spy not found in {venv / 'bin'}" in r for r in reasons)
