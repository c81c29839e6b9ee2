"""The one list of secret shapes: each kind found, look-alikes and placeholders not, lint shares it."""

from __future__ import annotations

import pytest

from reporter.render import lint
from reporter.secrets import shapes as secrets


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("GH=ghp_" + "a1B2" * 9, "github-token", "ghp_" + "a1B2" * 9),
        ("t=github_pat_" + "A1b2C3d4E5f6G7h8I9j0K1" + "_" + "x" * 59, "github-token", None),
        ("hf_" + "AbC1" * 9, "huggingface-token", None),
        ("sk-ant-api03-" + "Ab1_" * 10, "anthropic-key", None),
        ("key sk-proj-" + "Ab1-" * 10, "openai-key", None),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key-id", "AKIAIOSFODNN7EXAMPLE"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws-secret-access-key",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        ("xoxb-1234567890-abcdefghij", "slack-token", None),
        ("https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnop", "slack-webhook", None),
        ("sk_live_" + "a1" * 12, "stripe-key", None),
        ("AIza" + "b" * 35, "google-api-key", None),
        ("glpat-" + "x1" * 10, "gitlab-token", None),
        ("npm_" + "a" * 36, "npm-token", None),
        ("pypi-AgEIcHlwaS5vcmc" + "x" * 30, "pypi-token", None),
        ("SG." + "a" * 22 + "." + "b" * 43, "sendgrid-key", None),
        ("dapi" + "0a" * 16, "databricks-token", None),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "jwt", None),
        (
            "Authorization: Bearer 0123456789abcdefghijKLMN",
            "bearer-token",
            "0123456789abcdefghijKLMN",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "basic-auth", "dXNlcjpwYXNzd29yZA=="),
        ("postgres://svc:s3cr3t-pw@db.internal/x", "url-password", "s3cr3t-pw"),
        ("AccountKey=" + "Ab1+" * 10 + "==", "azure-key", None),
        ("Cookie: session=abcdefgh12345678", "cookie", "session=abcdefgh12345678"),
        ("serve --api-key Xy7zQ1w2e3r4t5 --tp 4", "secret-flag", "Xy7zQ1w2e3r4t5"),
        ("serve --hf-token=abc123def456", "secret-flag", "abc123def456"),
        ("retry with password=Hunter2-x", "secret-assignment", "Hunter2-x"),
        ('"client_secret": "c2VjcmV0LXZhbHVl"', "secret-assignment", "c2VjcmV0LXZhbHVl"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEab\ncd==\n-----END RSA PRIVATE KEY-----",
            "private-key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEab\ncd==\n-----END RSA PRIVATE KEY-----",
        ),
        (
            "KEY=-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn\\n-----END OPENSSH PRIVATE KEY-----",
            "private-key",
            "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn\\n-----END OPENSSH PRIVATE KEY-----",
        ),
    ],
)
def test_each_shape_is_found(text: str, kind: str, value: str | None) -> None:
    hits = secrets.scan(f"prefix {text} suffix")
    kinds = {h.kind for h in hits}
    assert kind in kinds, hits
    if value is not None:
        assert value in {h.value for h in hits}


@pytest.mark.parametrize(
    "text",
    [
        "TOKENIZERS_PARALLELISM=false",
        "max_new_tokens=128 --max-total-tokens 4096",
        "#token: 4083, token usage: 0.20",
        "the bearer of bad news; sk-short; hf_abc; AKIA123",
        "credentials=/etc/secrets/creds.json",
        "password=<secret-1> api_key: [redacted] --api-key <secret-2>",
        "pad_token: '<|endoftext|>'",
    ],
)
def test_look_alikes_and_placeholders_are_not_secrets(text: str) -> None:
    assert secrets.scan(text) == []


def test_library_plugins_catch_formats_we_do_not_list() -> None:
    twilio = "SK" + "0123456789abcdef" * 2
    hits = secrets.scan(f"twilio key={twilio} throttled")
    assert any(h.kind.startswith("detect-secrets") and h.value == twilio for h in hits)


def test_overlaps_resolve_to_one_hit_per_span() -> None:
    text = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    hits = secrets.scan(text)
    assert [h.kind for h in hits] == ["aws-secret-access-key"]


def test_lint_uses_the_same_list() -> None:
    assert lint.find_secrets is secrets.find_secrets
    found = list(lint.find_secrets("line one\n--api-key Xy7zQ1w2e3r4t5\n"))
    assert found == [(2, "secret command-line option", "Xy7z… (14 characters)")]
