"""Selection of targets, request checks, schedules and file names (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.collect import plan
from reporter.collect.plan import CollectRequest
from reporter.collect.procfs import ProcessInfo
from reporter.core.errors import UsageError

PY = "/usr/bin/python3.11"


def _proc(
    pid: int, ppid: int, argv: tuple[str, ...], *, exe: str | None = PY, state: str = "S"
) -> ProcessInfo:
    comm = (argv[0].rpartition("/")[2] if argv else "kthreadd")[:15]
    return ProcessInfo(pid=pid, ppid=ppid, state=state, comm=comm, argv=argv, uid=0, exe=exe)


# An SGLang host: init, a shell running report collect, the launcher and its children.
PROCESSES = [
    _proc(1, 0, ("/sbin/init",), exe="/sbin/init"),
    _proc(2, 0, (), exe=None),  # kernel thread
    _proc(100, 1, ("bash", "-c", "report collect --match sglang::scheduler_TP"), exe="/bin/bash"),
    _proc(101, 100, (PY, "-m", "reporter", "collect", "--match", "sglang::scheduler_TP")),
    _proc(102, 101, ("py-spy", "dump", "--pid", "201"), exe="/usr/bin/py-spy"),
    _proc(200, 1, (PY, "-m", "sglang.launch_server", "--tp", "4")),
    _proc(201, 200, ("sglang::scheduler_TP0",)),
    _proc(202, 200, ("sglang::scheduler_TP1",)),
    _proc(203, 200, ("sglang::scheduler_TP2",), state="Z"),
    _proc(204, 200, ("sglang::detokenizer",)),
    _proc(300, 1, ("tail", "-f", "/var/log/sglang::scheduler_TP0.log"), exe="/usr/bin/tail"),
    _proc(400, 1, ("sglang::scheduler_TP0",)),  # a second server elsewhere
]


def _python(info: ProcessInfo) -> bool | None:
    return None if info.exe is None else info.exe.endswith("python3.11")


def _select(**options: object) -> plan.Selection:
    request = CollectRequest(out=Path("b"), **options)  # type: ignore[arg-type]
    return plan.select_targets(PROCESSES, request, own_pid=101, is_python=_python)


@pytest.mark.parametrize(
    ("options", "targets", "passed"),
    [
        ({"match": "sglang::scheduler_TP"}, [201, 202, 400], [203, 300]),
        ({"match": "sglang::scheduler_TP", "children_of": 200}, [201, 202], [203]),
        ({"children_of": 200}, [201, 202, 204], [203]),
        ({"pids": (300,)}, [300], []),
        ({"pids": (204,), "match": "TP1$"}, [202, 204], []),
        ({"match": "^sglang::detok"}, [204], []),
        # The comm (15 characters of the title) is matched too.
        ({"match": "^sglang::schedul$"}, [201, 202, 400], [203]),
        ({"match": "nothing-like-this"}, [], []),
    ],
)
def test_select_targets(options: dict[str, object], targets: list[int], passed: list[int]) -> None:
    selection = _select(**options)
    assert [t.process.pid for t in selection.targets] == targets
    assert [p.process.pid for p in selection.passed] == passed


def test_select_never_picks_the_collector_or_its_shell() -> None:
    selection = _select(match="report collect|reporter|py-spy")
    assert selection.targets == ()


def test_select_reasons() -> None:
    selection = _select(match="sglang::scheduler_TP", pids=(204,))
    reasons = {t.process.pid: t.reason for t in selection.targets}
    assert reasons[204] == "--pid" and reasons[201] == "--match"
    why = {p.process.pid: p.reason for p in selection.passed}
    assert "zombie" in why[203]
    assert "not a Python process (/usr/bin/tail)" in why[300]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pids": (999,)}, "no process with PID 999"),
        ({"children_of": 999}, "no process with PID 999"),
        ({"pids": (101,)}, "report collect itself"),
    ],
)
def test_select_refuses(options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _select(**options)


def test_descendants_and_ancestors() -> None:
    assert plan.descendants(PROCESSES, 200) == {201, 202, 203, 204}
    assert plan.descendants(PROCESSES, 100) == {101, 102}
    assert plan.ancestors(PROCESSES, 102) == {101, 100, 1}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "nothing to collect"),
        ({"match": "("}, "not a regular expression"),
        ({"pids": (1,), "snapshots": 0}, "--snapshots"),
        ({"pids": (1,), "interval": -1.0}, "--interval"),
        ({"pids": (1,), "timeout": 0.0}, "--timeout"),
        ({"pids": (1,), "parallel": 0}, "--parallel"),
        ({"metrics_url": "127.0.0.1:30000/metrics"}, "not an http"),
        ({"metrics_url": "http://h/metrics", "scrape_every": 0.0}, "--scrape-every"),
        ({"prometheus": "http://prom:9090"}, "needs at least one --query"),
        ({"pids": (1,), "queries": ("up",)}, "--query needs --prometheus"),
        ({"units": ("x",), "wedge_window": 0.0}, "--wedge-window"),
        ({"logs": ("a.log",), "log_lines": 0}, "--log-lines"),
        ({"logs": ("a.log",), "log_bytes": 10}, "--log-size"),
        (
            {"logs": ("a.log",), "remote": plan.RemoteRequest(hosts=("node-a",))},
            "--log reads files on this host",
        ),
    ],
)
def test_validate_refuses(options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan.validate(CollectRequest(out=Path("b"), **options))  # type: ignore[arg-type]


def test_validate_accepts_each_kind_of_work() -> None:
    for options in (
        {"pids": (1,)},
        {"metrics_url": "https://h:8443/metrics"},
        {"prometheus": "http://prom:9090", "queries": ("up",)},
        {"units": ("sglang.service",)},
        {"logs": ("/var/log/sglang/*.log",)},
    ):
        plan.validate(CollectRequest(out=Path("b"), **options))


def test_schedules() -> None:
    assert plan.offsets(3, 1.5) == (0.0, 1.5, 3.0)
    assert plan.scrape_count(0.5, 5) == 11
    assert plan.scrape_count(2, 0) == 1
    assert plan.scrape_count(0.1, 0.3) == 4  # 0.3 / 0.1 is 2.9999... in floats
    assert plan.query_step(3600) == 4.0
    assert plan.query_step(60) == 1.0
    assert plan.query_step(3600, 15.0) == 15.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.5", 0.5), ("30s", 30.0), ("2m", 120.0), ("1h", 3600.0), ("250ms", 0.25)],
)
def test_seconds(text: str, expected: float) -> None:
    assert plan.seconds(text, option="--x") == expected


def test_seconds_refuses_and_zero() -> None:
    with pytest.raises(UsageError, match="--range 'soon' is not a duration"):
        plan.seconds("soon", option="--range")
    with pytest.raises(UsageError):
        plan.seconds("0", option="--scrape-every")
    assert plan.seconds("0", option="--interval", allow_zero=True) == 0.0


def test_names() -> None:
    assert plan.dump_path(4711, 2) == "pyspy/pid4711-s2.txt"
    assert plan.env_path(4711, "environ") == "env/pid4711.environ"
    assert plan.query_path(2, "rate(sglang:generation_tokens_total[1m])") == (
        "metrics/prometheus/q2-rate-sglang-generation-tokens-total-1m.json"
    )
    assert plan.unit_path("sglang@0.service") == "systemd/sglang-0-service.txt"
    assert plan.slug("***") == "query"
    assert plan.proc_path(4711, 2, "fds") == "proc/pid4711-s2.fds"
    assert plan.journal_path("sglang@0.service") == "logs/journal-sglang-0-service.log"


@pytest.mark.parametrize(
    ("titles", "expected"),
    [
        (["sglang::scheduler_TP0", "sglang::scheduler_TP1"], "sglang"),
        (["VLLM::Worker_TP0"], "vllm"),
        (["sglang::scheduler_TP0", "VLLM::Worker_TP0"], ""),
        (["python3 app.py"], ""),
    ],
)
def test_framework(titles: list[str], expected: str) -> None:
    assert plan.framework(titles) == expected


def test_launchers_are_the_nearest_ancestors_outside_the_targets() -> None:
    procs = [
        _proc(1, 0, ("/sbin/init",), exe="/sbin/init"),
        _proc(10, 1, (PY, "-m", "sglang.launch_server", "--port", "30000")),
        _proc(11, 10, ("sglang::scheduler_TP0",)),
        _proc(12, 10, ("sglang::scheduler_TP1",)),
        _proc(20, 1, (PY, "-m", "sglang.launch_server", "--port", "30001")),
        _proc(21, 20, ("sglang::scheduler_TP0",)),
        _proc(30, 1, ("orphan",)),
        _proc(31, 30, ("child",)),
    ]
    found = plan.launchers(procs, [11, 12, 21, 30, 31])
    assert found == {11: 10, 12: 10, 21: 20}
