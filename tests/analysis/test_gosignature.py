"""Go dumps' signatures rest on where their goroutines wait, not on the dump's form."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.analysis import analyze
from reporter.analysis.gosignature import go_wait_lines
from reporter.load import bundle

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "fixtures" / "goroutines" / "agents"
KVDEMO = ROOT / "fixtures" / "samples" / "go"


def _signature(path: Path) -> str:
    return analyze(bundle.load([path])).signature.hash


def test_one_hang_in_three_forms_is_one_signature() -> None:
    """The agents' clients stuck in roundTrip, taken as debug=1, debug=2 and SIGQUIT."""
    forms = {_signature(AGENTS / name) for name in ("debug1.txt", "debug2.txt", "sigquit.txt")}
    assert len(forms) == 1


@pytest.mark.parametrize(
    "other",
    [
        KVDEMO / "go1.19_pprof-goroutine_debug2.txt",
        KVDEMO / "go1.19_panic_unrecovered.txt",
    ],
    ids=["kvdemo-blocked", "kvdemo-panic"],
)
def test_other_programs_or_other_waits_are_other_signatures(other: Path) -> None:
    assert _signature(other) != _signature(AGENTS / "debug2.txt")


def test_the_lines_name_the_wait_not_the_counts() -> None:
    loaded = bundle.load([AGENTS / "debug2.txt"])
    lines = go_wait_lines(analyze(loaded).goroutines)
    assert lines == ("go wait: net/http.(*persistConn).roundTrip",)
    assert go_wait_lines(None) == ()
