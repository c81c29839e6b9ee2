"""Issue 32 step 7: secrets behind an encoding, split over two values, or named by a word at
the end or inside the name; and the same answer from the report, `report lint` and the
upstream gate."""

from __future__ import annotations

import base64

import pytest

from reporter import secrets
from reporter.render.lint import find_secrets
from reporter.secrets import encoded

from .forms import B64_GHP, B64_USER_PW, GHP, HEX_GHP, PW, SENTRY_KEY


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"SGLANG_UPSTREAM_BASIC={B64_USER_PW}", "base64-secret"),
        (f"auth {B64_USER_PW} cached", "base64-secret"),
        (f"VLLM_MIRROR_BLOB={B64_GHP}", "base64-secret"),
        (f"BLOB={base64.urlsafe_b64encode(GHP.encode()).decode().rstrip('=')}", "base64-secret"),
        (f"SGLANG_MIRROR_HEX={HEX_GHP}", "hex-secret"),
        # Quoted, detect-secrets' hex plugin finds the same span: either may name it.
        (f'{{"blob": "{HEX_GHP}"}}', "hex-secret|detect-secrets-hex-high-entropy-string"),
        ("SGLANG_TOK_A=ghp_", "token-prefix-alone"),
        ('tok = "ghp_" + rest', "token-prefix-alone"),
        ("head=glpat-LqLJ3p tail=p3JL9", "token-prefix-alone"),
        ("A=gho_Zq7own", "token-prefix-alone"),
        ("HF=hf_", "token-prefix-alone"),
        (f"to https://{SENTRY_KEY}@sentry.acme.example/7", "sentry-dsn"),
        (f"https://{SENTRY_KEY}:{SENTRY_KEY[::-1]}@sentry.io/42", "sentry-dsn"),
        (f"ANALYTICS_DB={PW}", "secret-assignment"),
        (f"REDIS_PASSWD2={PW}", "secret-assignment"),
    ],
)
def test_new_forms_are_found_and_masked_whole(text: str, kind: str) -> None:
    hits = secrets.scan(text)
    assert set(kind.split("|")) & {h.kind for h in hits}, hits
    masked = secrets.mask_text(text)
    for leaked in (B64_USER_PW, B64_GHP, HEX_GHP, PW, SENTRY_KEY, "ghp_", "glpat-"):
        assert leaked not in masked or leaked not in text, masked
    assert secrets.mask_text(masked) == masked  # idempotent: the mask scans clean


@pytest.mark.parametrize(
    "text",
    [
        "commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",  # hex of binary: a hash
        "sha256:" + "e0ef600f4ea98d1b0f3c2b7a9d5e4f11" * 2,
        "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
        "sglang_scheduler_tp0_worker_process_group",
        "SGVsbG8sIHdvcmxkIQ==",  # base64 of plain prose: "Hello, world!"
        base64.b64encode(b"GPU 0: NVIDIA H100 80GB").decode(),
        "tensor: <Tensor at 0x7f3a1c2d9b30>",
        "from huggingface_hub import hf_hub_download",
        "mode: ghp_token_scope is a docs word",  # a prefix before a word, not a token piece
        "tokens start with ghp_token",
        "https://0123456789abcdef@sentry.acme.example/7",  # a 16-hex user: no DSN key
    ],
)
def test_clean_text_stays(text: str) -> None:
    assert secrets.mask_text(text) == text, secrets.scan(text)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("ANALYTICS_DB", PW, "[redacted]"),
        ("METRICS_DSN", PW, "[redacted]"),
        ("REDIS_PASSWD2", PW, "[redacted]"),
        ("DBPASSCODE", PW, "[redacted]"),
        ("SGLANG_TOK_A", "ghp_", "[redacted]"),
        ("SGLANG_TOK_B", GHP[4:], "[redacted]"),
        ("SGLANG_UPSTREAM_BASIC", B64_USER_PW, "[redacted]"),
        # A name secret only by its last word still shows a number or a path.
        ("REDIS_DB", "0", "0"),
        ("SQLITE_DB", "/var/lib/app/runs.sqlite3", "/var/lib/app/runs.sqlite3"),
        ("VLLM_ALLOW_PASSTHROUGH", "1", "1"),
        ("SGLANG_PASSIVE_MODE", "on", "on"),
        ("DB_HOST", "db.internal", "db.internal"),
    ],
)
def test_named_values(name: str, value: str, shown: str) -> None:
    assert secrets.mask_value(name, value) == shown


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANALYTICS_DB", True),
        ("METRICS_DSN", True),
        ("REDIS_PASSWD2", True),
        ("XPASSX", True),
        ("DB", False),
        ("DB_HOST", False),
        ("DB_NAME", False),
        ("VLLM_ALLOW_PASSTHROUGH", False),
        ("PASSIVE", False),
        ("COMPASS_DIR", False),
        ("BYPASS_CACHE", False),
    ],
)
def test_names(name: str, secret: bool) -> None:
    assert secrets.is_secret_name(name) is secret


def test_decoded_runs_only_yield_text() -> None:
    runs = list(encoded.decoded_runs(f"a {B64_GHP} b {HEX_GHP} c {'ab' * 40}"))
    assert [(r.encoding, r.text) for r in runs] == [("base64", GHP), ("hex", GHP)]
    assert encoded.looks_like_credential(f"svc-runner:{PW}")
    assert not encoded.looks_like_credential("Hello, world!")
    # Runs past the bound are left alone (linear work on a megabyte of base64).
    assert list(encoded.decoded_runs(base64.b64encode(GHP.encode() * 200).decode())) == []


def test_lint_and_the_upstream_gate_see_the_new_forms() -> None:
    """`report lint` and the filing gate share `scan` (and `SecretPolicy` for names)."""
    report = "\n".join(
        [
            "# Incident",
            f"basic: {B64_USER_PW}",
            f"mirror: {HEX_GHP}",
            "first half: ghp_",
            f"ANALYTICS_DB={PW}",
            f"dsn https://{SENTRY_KEY}@sentry.acme.example/7",
        ]
    )
    lines = sorted({line for line, _, _ in find_secrets(report)})
    assert lines == [2, 3, 4, 5, 6]
