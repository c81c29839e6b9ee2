"""Redaction: identifiers and secrets to consistent placeholders, learnt values hunted, a report."""

from __future__ import annotations

import pytest

from reporter.upstream.redact import Piece, leaks, redact


def _one(text: str, *, key: str = "", vocabulary: tuple[str, ...] = ()) -> str:
    return redact([Piece(where="t", text=text, key=key)], vocabulary=vocabulary).texts[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("peer 10.42.3.17 reset", "peer <ip-1> reset"),
        ("MASTER_ADDR=10.42.3.17:29500", "MASTER_ADDR=<ip-1>:29500"),
        ("bind fd00:6b3:2a::4f21 ok", "bind <ip-1> ok"),
        ("nic 0c:42:a1:7e:19:5d up", "nic <mac-1> up"),
        ("page alice.nguyen@acme-corp.com now", "page <email-1> now"),
        ("ssh alice@gpu-node-17", "ssh <user-1>@<host-1>"),
        ("at gpu-node-17.cluster.internal:5000", "at <host-1>:5000"),
        ("http://sglang-router:30000/generate", "http://<host-1>:30000/generate"),
        ("/home/alice/venv/lib/x.py", "/home/<user-1>/venv/lib/x.py"),
        ("/Users/bob/.cache", "/Users/<user-1>/.cache"),
        ("HOSTNAME=sglang-decode-7f9c5d-x2x9z", "HOSTNAME=<host-1>"),
        (
            'up{instance="node-3.acme.com:9100",pod="decode-0"}',
            'up{instance="<host-1>:9100",pod="<host-2>"}',
        ),
        (
            "Nov 29 14:43:09 gpu-node-17 systemd[1]: started",
            "Nov 29 14:43:09 <host-1> systemd[1]: started",
        ),
        ("--host gpu7 --port 30000", "--host <host-1> --port 30000"),
        ("USER=alice", "USER=<user-1>"),
        ("postgres://svc:pw1234567@db.acme.com/x", "postgres://<user-1>:<password-1>@<host-1>/x"),
        ('    token: "s3cr3tT0k3nV4lu3"', '    token: "<secret-1>"'),
    ],
)
def test_identifiers_and_secrets_become_placeholders(text: str, expected: str) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "vLLM Version                 : 0.10.1.1",
        "nvidia-cublas-cu12==12.8.4.1 torch==2.8.0",
        "listening on 127.0.0.1:8000, 0.0.0.0:30000 and [::1]:9000",
        "logger.info threading.local model.pt tokenizer.model sglang.srt.managers",
        "c10d::ProcessGroupNCCL::allreduce at 14:43:24.551",
        "https://github.com/sgl-project/sglang/issues/4512 and https://huggingface.co/Qwen",
        "git+https://github.com/sgl-project/sglang@8f1c2d3e4b5a6978 installed",
        "/root/.pyenv/versions/3.11.7/bin/python3.11",
    ],
)
def test_clean_evidence_is_left_alone(text: str) -> None:
    assert _one(text) == text


def test_one_value_is_one_placeholder_in_every_piece() -> None:
    result = redact(
        [
            Piece(where="env", text="HOSTNAME=gpu-node-17\nMASTER_ADDR=10.1.2.3"),
            Piece(where="log", text="NCCL timeout on gpu-node-17 (10.1.2.3); 10.9.9.9 too"),
        ]
    )
    assert result.texts == (
        "HOSTNAME=<host-1>\nMASTER_ADDR=<ip-1>",
        "NCCL timeout on <host-1> (<ip-1>); <ip-2> too",
    )
    assert [(e.kind, e.where, e.count) for e in result.report] == [
        ("host", "env", 1),
        ("ipv4", "env", 1),
        ("host", "log", 1),
        ("ipv4", "log", 2),
    ]
    assert result.total() == 5
    assert result.placeholders == (("<host-1>", "host"), ("<ip-1>", "ipv4"), ("<ip-2>", "ipv4"))


def test_generic_names_and_code_words_are_not_hunted_elsewhere() -> None:
    result = redact(
        [
            Piece(where="env", text="USER=ubuntu\nHOSTNAME=scheduler"),
            Piece(where="stack", text="ubuntu scheduler sglang.srt.managers.scheduler"),
        ],
        vocabulary=["scheduler"],
    )
    assert result.texts[0] == "USER=<user-1>\nHOSTNAME=<host-1>"
    assert result.texts[1] == "ubuntu scheduler sglang.srt.managers.scheduler"


def test_a_learnt_specific_name_is_hunted_everywhere() -> None:
    result = redact(
        [Piece(where="env", text="USER=alice"), Piece(where="notes", text="alice restarted it")]
    )
    assert result.texts == ("USER=<user-1>", "<user-1> restarted it")


def test_keyed_pieces_are_judged_by_their_name() -> None:
    assert _one("sglang-decode-7c9f6d8b5-hwiju", key="HOSTNAME") == "<host-1>"
    assert _one("plain-value-here", key="SGLANG_API_KEY") == "<secret-1>"
    assert _one("0.10.1.1", key="version") == "0.10.1.1"


def test_multi_line_secret_env_values_are_hidden_whole() -> None:
    text = (
        'NCCL_DEBUG=WARN\nGOOGLE_CREDENTIALS={\n  "type": "service_account",\n'
        '  "project_id": "acme"\n}\nOMP_NUM_THREADS=8'
    )
    out = _one(text)
    assert "service_account" not in out and "acme" not in out
    assert out.startswith("NCCL_DEBUG=WARN\n") and out.endswith("OMP_NUM_THREADS=8")


def test_apply_and_leaks_use_the_learnt_values() -> None:
    result = redact([Piece(where="env", text="HOSTNAME=gpu-node-17")])
    assert result.apply("seen on gpu-node-17") == "seen on <host-1>"
    assert leaks("all clean: <host-1>", redaction=result) == ()
    found = leaks("x\nback on gpu-node-17 and 10.0.0.8", redaction=result)
    assert [(leak.kind, leak.line) for leak in found] == [("known-value", 2), ("ipv4", 2)]
    assert "gpu-node-17" not in str(found[0])
    assert "gpu-node-17" not in repr(result)
