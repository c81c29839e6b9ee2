"""The product's environment report at collect time: `python -m sglang.check_env` (or
vLLM's `collect_env`) run in the target's interpreter, bounded, secrets masked."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from reporter.collect import envcap
from reporter.collect.plan import CollectRequest
from reporter.collect.state import SessionState


def _interpreter(tmp_path: Path, module_text: str) -> envcap.Interpreter:
    """An interpreter (a wrapper around this one) whose path holds a fake `sglang` package."""
    package = tmp_path / "site" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "check_env.py").write_text(module_text, encoding="utf-8")
    wrapper = tmp_path / "python"
    wrapper.write_text(
        f'#!/bin/sh\nPYTHONPATH={tmp_path / "site"} exec {sys.executable} "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    return envcap.Interpreter(argv0=str(wrapper), executable=str(wrapper), real=str(wrapper))


def test_the_product_picks_its_script() -> None:
    assert envcap.env_script_for("numpy==2.0\nsglang==0.5.2\ntorch==2.8.0\n") == (
        "sglang",
        "sglang.check_env",
        "sglang-check-env",
        "check_env.txt",
    )
    assert envcap.env_script_for("vllm==0.10.1\ntorch==2.8.0\n")[1] == "vllm.collect_env"  # type: ignore[index]
    assert envcap.env_script_for("torch==2.8.0\n") is None


def test_check_env_runs_in_the_targets_interpreter_with_secrets_masked(tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4" * 4 + "e5F6"
    interpreter = _interpreter(
        tmp_path,
        f"print('Python: 3.11.7')\nprint('sglang: 0.5.2')\nprint('HF_TOKEN={token}')\n",
    )
    ran = envcap.run_env_script(interpreter, "sglang.check_env", timeout=30, stop=None)
    assert ran.error == ""
    assert "python -m sglang.check_env" in ran.note
    # The capture is raw; the session masks what it keeps, even under --raw-env (a tool's
    # report, not the environment itself).
    assert token in ran.text
    for raw_env in (False, True):
        request = CollectRequest(out=tmp_path / "bundle", raw_env=raw_env)
        kept = SessionState(request, progress=lambda _line: None, stop=threading.Event())
        shown = kept.masked(ran.text)
        assert "sglang: 0.5.2" in shown and token not in shown


def test_a_script_that_hangs_is_ended_at_its_timeout(tmp_path: Path) -> None:
    interpreter = _interpreter(tmp_path, "import time\ntime.sleep(60)\n")
    ran = envcap.run_env_script(interpreter, "sglang.check_env", timeout=1, stop=None)
    assert ran.text == "" and "no answer within 1 s" in ran.error


def test_a_failing_script_says_why(tmp_path: Path) -> None:
    interpreter = _interpreter(tmp_path, "raise SystemExit('no GPU driver here')\n")
    ran = envcap.run_env_script(interpreter, "sglang.check_env", timeout=30, stop=None)
    assert "no GPU driver here" in ran.error
