"""Go goroutine dump parser: real go1.19 captures, header forms, frames, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.evidence import goroutines
from reporter.model import GoDumpForm, GoFrame, ParseResult

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "fixtures" / "goroutines" / "agents"


def _parse(text: str) -> ParseResult:
    return goroutines.parse(text, source="g.txt")


# --------------------------------------------------------------------------- real captures


@pytest.mark.parametrize(
    ("name", "form", "count", "headline"),
    [
        ("go1.19_panic_unrecovered.txt", GoDumpForm.PANIC, 1, "panic: boom: simulated crash"),
        (
            "go1.19_pprof-goroutine_debug1_aggregated.txt",
            GoDumpForm.AGGREGATED,
            7,
            "goroutine profile: total 7",
        ),
        ("go1.19_pprof-goroutine_debug2.txt", GoDumpForm.TRACEBACK, 7, ""),
        ("go1.19_runtime-Stack_all_with-minutes.txt", GoDumpForm.TRACEBACK, 2, ""),
        ("go1.19_sigquit_full-dump_with-registers.txt", GoDumpForm.SIGQUIT, 15, "SIGQUIT: quit"),
    ],
)
def test_reference_samples(
    other_samples: Path, name: str, form: GoDumpForm, count: int, headline: str
) -> None:
    result = goroutines.parse((other_samples / name).read_text(encoding="utf-8"), source=name)
    (dump,) = result.goroutine_dumps
    assert (dump.form, dump.headline) == (form, headline)
    assert sum(g.count for g in dump.goroutines) == count
    assert not result.warnings
    assert goroutines.sniff((other_samples / name).read_text(encoding="utf-8"))


def test_debug2_details(other_samples: Path) -> None:
    text = (other_samples / "go1.19_pprof-goroutine_debug2.txt").read_text(encoding="utf-8")
    dump = _parse(text).goroutine_dumps[0]
    by_id = {g.id: g for g in dump.goroutines}
    lock = by_id[24]
    assert lock.state == "semacquire"
    assert [f.function for f in lock.frames] == [
        "sync.runtime_SemacquireMutex",
        "sync.(*Mutex).lockSlow",
        "sync.(*Mutex).Lock",
        "main.(*kvServer).lockedWork",
    ]
    assert lock.frames[2] == GoFrame(
        function="sync.(*Mutex).Lock",
        args="...",
        file="/usr/lib/go-1.19/src/sync/mutex.go",
        line=90,
    )
    assert lock.created_by == GoFrame(function="main.main", file="/srv/go-demo/main.go", line=33)
    assert [f.package for f in lock.frames] == ["sync", "sync", "sync", "main"]
    assert GoFrame(function="net/http.(*persistConn).roundTrip").package == "net/http"
    assert by_id[21].frames[0].args == "{0x54aa68, 0xc000098018}"
    assert by_id[1].created_by is None


def test_minutes_and_locked_to_thread(other_samples: Path) -> None:
    minutes = _parse(
        (other_samples / "go1.19_runtime-Stack_all_with-minutes.txt").read_text(encoding="utf-8")
    )
    blocker = minutes.goroutine_dumps[0].goroutines[1]
    assert (blocker.state, blocker.wait_minutes) == ("chan receive", 1)
    sigquit = _parse(
        (other_samples / "go1.19_sigquit_full-dump_with-registers.txt").read_text(encoding="utf-8")
    )
    locked = [g for g in sigquit.goroutine_dumps[0].goroutines if g.locked_to_thread]
    assert [g.id for g in locked] == [19]


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
