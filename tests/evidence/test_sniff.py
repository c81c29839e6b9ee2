"""Tests for content sniffing and parser dispatch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.evidence import sniff
from reporter.model import EvidenceKind, ParseResult

from .conftest import SAMPLES


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('[\n  {\n    "pid": 1', EvidenceKind.PYSPY_JSON),
        ("[]\n", EvidenceKind.PYSPY_JSON),
        ("\ufeff  [ {}]", EvidenceKind.PYSPY_JSON),
        ("Process 7: python a.py\nPython v3.11.7 (/usr/bin/python3)\n", EvidenceKind.PYSPY_TEXT),
        ('Thread 7 (idle): "MainThread"\n    f (a.py:1)\n', EvidenceKind.PYSPY_TEXT),
        ("[2026-07-14 08:34:44 TP6] Pyspy dump for PID 187:\n", EvidenceKind.PYSPY_TEXT),
        ("Error: Failed to find python version from target process\n", EvidenceKind.PYSPY_TEXT),
        ("Permission Denied\n", EvidenceKind.PYSPY_TEXT),
        ("sglang-1  | Error: Broken pipe (os error 32)\n", EvidenceKind.PYSPY_TEXT),
        ("Fatal Python error: Segmentation fault\n\n", EvidenceKind.FAULTHANDLER),
        ("Thread 0x00007f73372636c0 (most recent call first):\n", EvidenceKind.FAULTHANDLER),
        (
            "Current thread 0x00007f73372636c0 (most recent call first):\n",
            EvidenceKind.FAULTHANDLER,
        ),
        ("Timeout (0:00:01)!\n", EvidenceKind.FAULTHANDLER),
        ("x ValueError: bad\n", EvidenceKind.UNKNOWN),
        ("Process 7: not followed by an interpreter line\n", EvidenceKind.UNKNOWN),
        ('noise\n  File "/a.py", line 3 in f\n', EvidenceKind.FAULTHANDLER),
        ("[ts] Stack (most recent call first):\n", EvidenceKind.FAULTHANDLER),
        (
            # A log holding both: the first marker decides.
            "Timeout (0:00:01)!\nThread 0x00007f73372636c0 (most recent call first):\n"
            "Process 7: python a.py\nPython v3.11.7 (/usr/bin/python3)\n",
            EvidenceKind.FAULTHANDLER,
        ),
        (
            'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nValueError: x\n',
            EvidenceKind.UNKNOWN,
        ),
        ("[2026-07-14 08:34:44] INFO all good\n", EvidenceKind.LOG),
        ("# HELP sglang:num_running_reqs x\n", EvidenceKind.PROMETHEUS_TEXT),
        # Metric, service and log evidence (issue 3).
        (
            '{"status":"success","data":{"resultType":"matrix","result":[]}}',
            EvidenceKind.PROMETHEUS_JSON,
        ),
        ('{\n  "status": "error",\n  "errorType": "bad_data"}', EvidenceKind.PROMETHEUS_JSON),
        ("# scrape at 2026-11-29T14:40:00Z\nfoo 1\n", EvidenceKind.PROMETHEUS_TEXT),
        (
            'sglang:num_running_reqs{tp_rank="0"} 3.0\nfoo_total 12 1712345678000\n',
            EvidenceKind.PROMETHEUS_TEXT,
        ),
        ('\ufeff"Time","{tp_rank=""0""}"\r\n2024-04-05 10:00:00,12\r\n', EvidenceKind.GRAFANA_CSV),
        ("sep=;\nTime;running\n", EvidenceKind.GRAFANA_CSV),
        ('"Series","Time","Value"\n', EvidenceKind.GRAFANA_CSV),
        (
            "Id=sglang.service\nMainPID=7\nExecMainStartTimestamp=Sun 2026-11-29 14:39:58 UTC\n",
            EvidenceKind.SYSTEMD_SHOW,
        ),
        ("2026-11-29T14:40:00Z started\nnot stamped\n2026-11-29T14:40:01Z ok\n", EvidenceKind.LOG),
        ("Nov 29 14:40:00 host sglang[4]: hello\n", EvidenceKind.LOG),
        ("INFO 11-29 14:40:31 [api_server.py:1043] vLLM API server\n", EvidenceKind.LOG),
        # A timestamped log line that holds a py-spy dump marker stays a dump.
        (
            "[2026-07-14 08:34:44] x\n[2026-07-14 08:34:44 TP6] Pyspy dump for PID 187:\n",
            EvidenceKind.PYSPY_TEXT,
        ),
        ("KEY=VALUE\nOTHER=2\n", EvidenceKind.UNKNOWN),
        ("", EvidenceKind.UNKNOWN),
    ],
)
def test_sniff_table(text: str, kind: EvidenceKind) -> None:
    assert sniff.sniff(text) is kind


def test_sniff_reads_only_the_head() -> None:
    text = "x\n" * (sniff.SNIFF_CHARS // 2) + "Process 7: a\nPython v3.11.7 (/p)\n"
    assert sniff.sniff(text) is EvidenceKind.UNKNOWN


def test_sniff_real_samples() -> None:
    expected_suffix = {".json": EvidenceKind.PYSPY_JSON, ".txt": EvidenceKind.PYSPY_TEXT}
    pyspy_files = sorted((SAMPLES / "pyspy").iterdir())
    assert len(pyspy_files) >= 30
    for path in pyspy_files:
        if path.suffix in expected_suffix:
            assert sniff.sniff(path.read_text(encoding="utf-8")) is expected_suffix[path.suffix], (
                path.name
            )
    others = {
        "faulthandler": EvidenceKind.FAULTHANDLER,
        "prometheus": EvidenceKind.PROMETHEUS_TEXT,
        "go": EvidenceKind.GOROUTINES,
    }
    for folder, kind in others.items():
        files = sorted((SAMPLES / folder).glob("*.txt"))
        assert files, folder
        for path in files:
            assert sniff.sniff(path.read_text(encoding="utf-8")) is kind, path.name


_DUMP_KINDS = [
    EvidenceKind.PYSPY_TEXT,
    EvidenceKind.PYSPY_JSON,
    EvidenceKind.FAULTHANDLER,
    EvidenceKind.UNKNOWN,
]


def test_every_kind_has_a_parser_in_the_table() -> None:
    # The dispatch is a table (sniff.PARSERS), not an if-chain: a new EvidenceKind
    # without its row would fail here rather than with a KeyError on a user's bundle.
    assert set(sniff.PARSERS) == set(EvidenceKind)


@pytest.mark.parametrize("kind", _DUMP_KINDS)
def test_parse_dispatches_every_kind(kind: EvidenceKind) -> None:
    texts = {
        EvidenceKind.PYSPY_TEXT: "Process 7: a\nPython v3.11.7 (/p)\n\nThread 7 (idle)\n    f (a.py:1)\n",
        EvidenceKind.PYSPY_JSON: '[{"pid": 7, "thread_id": 1, "active": false, "frames": []}]',
        EvidenceKind.FAULTHANDLER: 'Stack (most recent call first):\n  File "/a.py", line 1 in f\n',
        EvidenceKind.UNKNOWN: "whatever",
    }
    result = sniff.parse(kind, texts[kind], source="s.txt")
    if kind is EvidenceKind.UNKNOWN:
        assert not result.dumps and len(result.warnings) == 1
        assert str(result.warnings[0].source) == "s.txt"
    else:
        assert not result.warnings
        assert [d.kind for d in result.dumps] == [kind]


@pytest.mark.parametrize(
    ("kind", "text", "what"),
    [
        (EvidenceKind.PROMETHEUS_TEXT, "# scrape at 2026-11-29T14:40:00Z\nfoo 1\n", "series"),
        (
            EvidenceKind.PROMETHEUS_JSON,
            '{"status":"success","data":{"resultType":"vector","result":'
            '[{"metric":{"__name__":"foo"},"value":[1764427200,"1"]}]}}',
            "series",
        ),
        (EvidenceKind.GRAFANA_CSV, "Time,foo\n1764427200000,1\n", "series"),
        (
            EvidenceKind.SYSTEMD_SHOW,
            "Id=a.service\nActiveEnterTimestamp=Sun 2026-11-29 14:39:58 UTC\n",
            "events",
        ),
        (EvidenceKind.LOG, "2026-11-29T14:40:00Z server started\n", "events"),
    ],
)
def test_parse_dispatches_metric_service_and_log_kinds(
    kind: EvidenceKind, text: str, what: str
) -> None:
    result = sniff.parse(kind, text, source="s.txt")
    assert sniff.sniff(text) is kind
    assert not result.warnings, result.warnings
    assert len(getattr(result, what)) == 1
    assert not result.dumps


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_sniff_and_parse_never_raise(text: str) -> None:
    kind = sniff.sniff(text)
    assert isinstance(sniff.parse(kind, text, source="fuzz"), ParseResult)
