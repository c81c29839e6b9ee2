"""Go goroutine dump parser: real go1.19 captures, header forms, frames, and bad input."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from reporter.evidence.kinds import goroutines
from reporter.model import GoDumpForm, GoFrame, ParseResult

from .conftest import SAMPLES

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "fixtures" / "goroutines" / "agents"


def _parse(text: str) -> ParseResult:
    return goroutines.parse(text, source="g.txt")


# --------------------------------------------------------------------------- real captures


GO = SAMPLES / "go"
KVDEMO = "/tmp/reporter-kvdemo/main.go"
_HEADER_RE = re.compile(r"(?m)^goroutine \d+ \[")


@pytest.mark.parametrize(
    ("name", "form", "headline"),
    [
        ("go1.19_panic_unrecovered.txt", GoDumpForm.PANIC, "panic: boom: simulated crash"),
        (
            "go1.19_pprof-goroutine_debug1_aggregated.txt",
            GoDumpForm.AGGREGATED,
            "goroutine profile",
        ),
        ("go1.19_pprof-goroutine_debug2.txt", GoDumpForm.TRACEBACK, ""),
        ("go1.19_runtime-Stack_all_with-minutes.txt", GoDumpForm.TRACEBACK, ""),
        ("go1.19_sigquit_full-dump_with-registers.txt", GoDumpForm.SIGQUIT, "SIGQUIT: quit"),
    ],
)
def test_real_samples(name: str, form: GoDumpForm, headline: str) -> None:
    text = (GO / name).read_text(encoding="utf-8")
    result = goroutines.parse(text, source=name)
    (dump,) = result.goroutine_dumps
    assert dump.form is form
    assert dump.headline.startswith(headline)
    if form is GoDumpForm.AGGREGATED:
        # The runtime's own total, in the first line, against the parsed counts.
        total = int(text.split("\n", 1)[0].rsplit(" ", 1)[1])
        assert sum(g.count for g in dump.goroutines) == total
    elif form is not GoDumpForm.SIGQUIT:
        assert sum(g.count for g in dump.goroutines) == len(_HEADER_RE.findall(text))
    assert not result.warnings
    assert goroutines.sniff(text)


def test_sigquit_keeps_one_goroutine_per_id() -> None:
    text = (GO / "go1.19_sigquit_full-dump_with-registers.txt").read_text(encoding="utf-8")
    (dump,) = _parse(text).goroutine_dumps
    # Each M's "goroutine 0 [idle]" (and a goroutine shown again under its M) is one
    # goroutine, not several.
    ids = {int(m) for m in re.findall(r"(?m)^goroutine (\d+) \[", text)}
    assert {g.id for g in dump.goroutines} == ids


def test_debug2_details(facts: dict[str, Any]) -> None:
    ids = facts["go"]["goroutines"]
    text = (GO / "go1.19_pprof-goroutine_debug2.txt").read_text(encoding="utf-8")
    dump = _parse(text).goroutine_dumps[0]
    by_id = {g.id: g for g in dump.goroutines}
    lock = by_id[ids["lock_waiter"]]
    assert lock.state == "semacquire"
    assert [f.function for f in lock.frames] == [
        "sync.runtime_SemacquireMutex",
        "sync.(*Mutex).lockSlow",
        "sync.(*Mutex).Lock",
        "main.(*kvServer).lockedWork",
        "main.main.func2",
    ]
    assert lock.frames[2] == GoFrame(
        function="sync.(*Mutex).Lock",
        args="...",
        file="/usr/lib/go-1.19/src/sync/mutex.go",
        line=90,
    )
    assert lock.frames[3].file == KVDEMO
    assert lock.frames[3].line == _go_line("s.mu.Lock()")
    assert lock.created_by == GoFrame(
        function="main.main", file=KVDEMO, line=_go_line('record(ids, &idsMu, "lock_waiter")') - 1
    )
    assert [f.package for f in lock.frames] == ["sync", "sync", "sync", "main", "main"]
    assert GoFrame(function="net/http.(*persistConn).roundTrip").package == "net/http"
    assert by_id[ids["holder"]].state == "sleep"
    assert by_id[1].created_by is None


def test_minutes_and_locked_to_thread(facts: dict[str, Any]) -> None:
    ids = facts["go"]["goroutines"]
    minutes = _parse((GO / "go1.19_runtime-Stack_all_with-minutes.txt").read_text(encoding="utf-8"))
    by_id = {g.id: g for g in minutes.goroutine_dumps[0].goroutines}
    # Captured 75 s after the goroutines blocked (capture_go.py --wait 75).
    assert (by_id[ids["chan_waiter"]].state, by_id[ids["chan_waiter"]].wait_minutes) == (
        "chan receive",
        1,
    )
    sigquit = _parse(
        (GO / "go1.19_sigquit_full-dump_with-registers.txt").read_text(encoding="utf-8")
    )
    locked = [g.id for g in sigquit.goroutine_dumps[0].goroutines if g.locked_to_thread]
    # Ours, and the one os/signal pins to its thread.
    assert ids["locked_thread"] in locked and len(locked) == 2


def _go_line(needle: str) -> int:
    """The line of `needle` in kvdemo's main.go (unique there)."""
    lines = (GO / "main.go").read_text(encoding="utf-8").splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if needle in line]
    return number


@pytest.mark.parametrize("name", ["debug2.txt", "sigquit.txt", "debug1.txt"])
def test_real_agents_capture(name: str) -> None:
    result = goroutines.parse((AGENTS / name).read_text(encoding="utf-8"), source=name)
    (dump,) = result.goroutine_dumps
    assert not result.warnings
    in_round_trip = [
        g
        for g in dump.goroutines
        for f in g.frames[:3]
        if f.function == "net/http.(*persistConn).roundTrip"
    ]
    assert sum(g.count for g in in_round_trip) == 34
    if name != "debug1.txt":
        assert {g.state for g in in_round_trip} == {"select"}
        assert {g.wait_minutes for g in in_round_trip} == {2, 3}
        assert {g.created_by.function for g in in_round_trip if g.created_by} == {
            "main.startAgents"
        }


# --------------------------------------------------------------------------- forms


@pytest.mark.parametrize(
    ("header", "gid", "state", "minutes", "locked"),
    [
        ("goroutine 7 [select]:", 7, "select", None, False),
        ("goroutine 7 [select, 12 minutes]:", 7, "select", 12, False),
        ("goroutine 7 [chan receive (scan), 3 minutes]:", 7, "chan receive", 3, False),
        (
            "goroutine 1 gp=0x2482dadec1e0 m=nil [chan send, 7 minutes, locked to thread]:",
            1,
            "chan send",
            7,
            True,
        ),
        ("goroutine 9 gp=0xc000007a00 m=3 mp=0xc000100008 [running]:", 9, "running", None, False),
        ("goroutine 5 [GC worker (idle)]:", 5, "GC worker (idle)", None, False),
        ("goroutine 5 [sync.Mutex.Lock, 1 minutes]:", 5, "sync.Mutex.Lock", 1, False),
    ],
)
def test_headers(header: str, gid: int, state: str, minutes: int | None, locked: bool) -> None:
    text = f"{header}\nmain.f()\n\t/src/main.go:3 +0x1\n"
    result = _parse(text)
    goroutine = result.goroutine_dumps[0].goroutines[0]
    assert (goroutine.id, goroutine.state, goroutine.wait_minutes, goroutine.locked_to_thread) == (
        gid,
        state,
        minutes,
        locked,
    )
    assert not result.warnings


def test_created_in_goroutine_and_elision() -> None:
    text = (
        "goroutine 50 [select]:\n"
        "main.work[...](0x1)\n"
        "\t/src/main.go:10 +0x20\n"
        "...12 frames elided...\n"
        "main.outer()\n"
        "\t/src/main.go:40\n"
        "created by cmd/compile/internal/gc.compileFunctions.func3 in goroutine 49\n"
        "\t/src/gc/compile.go:160 +0x1d2\n"
    )
    result = _parse(text)
    goroutine = result.goroutine_dumps[0].goroutines[0]
    assert goroutine.elided
    assert goroutine.parent_id == 49
    assert goroutine.created_by is not None
    assert goroutine.created_by.function == "cmd/compile/internal/gc.compileFunctions.func3"
    assert goroutine.created_by.line == 160
    assert [f.function for f in goroutine.frames] == ["main.work[...]", "main.outer"]
    assert not result.warnings


def test_log_prefixed_dump() -> None:
    prefix = "Jul 14 17:55:01 host agents[901]: "
    lines = [
        "goroutine 3 [select, 14 minutes]:",
        "net/http.(*persistConn).roundTrip(0xc0001, 0xc0002)",
        "\t/usr/lib/go/src/net/http/transport.go:2620 +0x974",
        "created by main.startAgents",
        "\t/srv/main.go:88 +0x1d2",
    ]
    result = _parse("".join(prefix + line + "\n" for line in lines))
    goroutine = result.goroutine_dumps[0].goroutines[0]
    assert goroutine.wait_minutes == 14
    assert goroutine.frames[0].line == 2620
    assert not result.warnings


def test_repeated_id_starts_the_next_dump() -> None:
    one = "goroutine 1 [running]:\nmain.main()\n\t/m.go:1 +0x1\n\n"
    result = _parse(one + one)
    assert len(result.goroutine_dumps) == 2


def test_debug1_labels() -> None:
    text = (
        "goroutine profile: total 3\n"
        "3 @ 0x1 0x2\n"
        '# labels: {"agent":"7", "phase":"decode"}\n'
        "#\t0x1\tmain.loop+0x10\t/srv/main.go:5\n"
    )
    goroutine = _parse(text).goroutine_dumps[0].goroutines[0]
    assert (goroutine.id, goroutine.count) == (None, 3)
    assert goroutine.labels == (("agent", "7"), ("phase", "decode"))
    assert goroutine.frames == (GoFrame(function="main.loop", file="/srv/main.go", line=5),)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("goroutine 1 [running]:\nmain.f()\n", ["g.txt:2: frame main.f has no location line"]),
        ("goroutine 1 [running]:\n\n", ["g.txt:1: goroutine 1 has no frames (cut?)"]),
        ("panic: boom\n\n", ["g.txt:1: panic: boom: no goroutines follow (cut short?)"]),
        (
            "goroutine 1 [running]:\nmain.f()\n\t/m.go\n",
            ["g.txt:3: location without a line number: '/m.go'"],
        ),
        (
            "goroutine 1 [running]:\nmain.f()\n\t/m.go:1 +0x1\nthis is noise\n",
            ["g.txt:4: line not understood as a Go goroutine dump: 'this is noise'"],
        ),
    ],
)
def test_bad_input_is_named_in_warnings(text: str, expected: list[str]) -> None:
    assert [str(w) for w in _parse(text).warnings] == expected


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\x00\x01",
        "goroutine",
        "goroutine 1 [",
        "\tonly a location:3\n",
        "created by x\n",
        "#\t0x1\n",
    ],
)
def test_garbage_never_raises(garbage: str) -> None:
    result = _parse(garbage)
    assert all(w.source.path == "g.txt" for w in result.warnings)


@pytest.mark.parametrize(
    ("call", "function", "args"),
    [
        ("main.main()", "main.main", ""),
        (
            "main.(*kvServer).transferLoop(0x0?, 0xc0000801e0)",
            "main.(*kvServer).transferLoop",
            "0x0?, 0xc0000801e0",
        ),
        ("sync.(*Mutex).Lock(...)", "sync.(*Mutex).Lock", "..."),
        ("pkg.F[...]({0x1, 0x2}, 0x3)", "pkg.F[...]", "{0x1, 0x2}, 0x3"),
        ("main.(*T)", "main.(*T)", ""),
        ("no.parens", "no.parens", ""),
    ],
)
def test_split_call(call: str, function: str, args: str) -> None:
    assert goroutines.split_call(call) == (function, args)


def test_sniff_negative() -> None:
    assert not goroutines.sniff("Thread 12 (idle): MainThread\n")
    assert not goroutines.sniff("the goroutine 5 [select] line in prose: no colon\n")
