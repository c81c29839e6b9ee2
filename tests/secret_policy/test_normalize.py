"""Disguises undone before matching (issue 21): the mask covers the span as written; new shapes."""

from __future__ import annotations

import pytest

from reporter import secrets
from reporter.secrets import normalize

# Built from parts so no scanner mistakes the test data for a real credential.
GHP = "ghp_" + "Zq7ownPw81xAbCd1234" + "EfGh5678IjKl9012Mn"
FULLWIDTH = "".join(chr(ord(c) + 0xFEE0) for c in GHP)


@pytest.mark.parametrize(
    "disguised",
    [
        GHP[:10] + "\u200b" + GHP[10:],  # zero-width space
        GHP[:10] + "\u2060" + GHP[10:],  # word joiner
        GHP[:10] + "\u00ad" + GHP[10:],  # soft hyphen
        GHP[:8] + "\u202e" + GHP[8:20] + "\u202c" + GHP[20:],  # bidi override
        GHP.replace("p", "\u0440", 1),  # Cyrillic er for p
        FULLWIDTH,
        "ghp%5F" + GHP[4:],  # percent-encoded
        "\\u0067hp_" + GHP[4:],  # JSON escape
        "ghp\\_" + GHP[4:],  # Markdown escape
    ],
)
def test_a_disguised_token_is_masked_over_its_whole_span(disguised: str) -> None:
    text = f"mirror={disguised} ok"
    masked = secrets.mask_text(text)
    assert masked == "mirror=[redacted] ok", masked
    assert secrets.mask_text(masked) == masked  # idempotent


def test_offsets_map_back_to_the_original() -> None:
    text = f"a {FULLWIDTH} b"
    plain = normalize.normalize(text)
    assert plain is not None
    assert plain.text == f"a {GHP} b"
    start = plain.text.index(GHP)
    assert plain.original(start, start + len(GHP)) == (2, 2 + len(FULLWIDTH))


def test_plain_ascii_needs_no_second_pass() -> None:
    assert normalize.normalize("NCCL_DEBUG=INFO and nothing else") is None


def test_a_large_text_is_searched_again_only_near_its_changes() -> None:
    filler = "plain evidence line\n" * 80_000
    text = filler + f"x {GHP[:10]}\u200b{GHP[10:]}\n" + filler
    plain = normalize.normalize(text)
    assert plain is not None
    windows = plain.windows()
    assert len(windows) == 1 and windows[0][1] - windows[0][0] < 64 * 1024
    assert "[redacted]" in secrets.mask_text(text[len(filler) - 100 : len(filler) + 200])
    hits = secrets.scan(text, library=False)
    assert [h.kind for h in hits] == ["github-token"]


@pytest.mark.parametrize(
    ("text", "kind", "hidden"),
    [
        (
            "SGLANG_X=machine api.example login svc password Nr-Zq7own",
            "netrc-password",
            "Nr-Zq7own",
        ),
        ("VLLM_CONN=db.internal:5432:runs:svc:Pg-Zq7own", "pgpass", "Pg-Zq7own"),
        (
            "SINK=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/42",
            "sentry-dsn",
            None,
        ),
        ("x hvs." + "CAESIJ4eZq7ownPw81xAbCd1234EfGh", "vault-token", None),
        ("x xapp-1-A0" + "12345678-1234567890123-" + "ab" * 32, "slack-token", None),
        ("x whsec_" + "Zq7ownPw81xAbCd1234EfGh5678", "stripe-key", None),
        ("x api_org_" + "ZqownPwxAbCdEfGhIjKlMnOpQrStUvWxYz", "huggingface-token", None),
        ("x ATATT3xFfGF0" + "Zq7own-Pw81x_AbCd" * 4, "atlassian-token", None),
        ("x abc8Q~" + "Zq7ownPw81xAbCd1234EfGh5678IjKl901", "azure-ad-client-secret", None),
        ("x NRAK-" + "ZQ7OWNPW81XABCD1234EFGH567", "newrelic-key", None),
        ("x AGE-SECRET-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58], "age-key", None),
        ("x dop_v1_" + "0123456789abcdef" * 4, "digitalocean-token", None),
        (
            "x PMAK-" + "0123456789abcdef01234567-" + "0123456789abcdef0123456789abcdef01",
            "postman-key",
            None,
        ),
        ("x shpat_" + "0123456789abcdef" * 2, "shopify-token", None),
    ],
)
def test_new_shapes(text: str, kind: str, hidden: str | None) -> None:
    hits = secrets.scan(text)
    assert kind in {h.kind for h in hits}, hits
    if hidden is not None:
        assert hidden not in secrets.mask_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "fe80:0:0:0:1ff:fe23:4567:890a%eth0 answered",
        "pipeline stages 1:2:3:4:5 and ratios 4:3:2:1:0",
        "the password for the machine is kept in vault",
        "machine learning workloads log in with the service account",
        "AUTH_PROXY_PORT_30000_TCP=tcp://10.96.85.146:30000",
        "detect-secrets==1.5.0",
        "sglang:token_usage: context; 40 means",
        "café, naïve, Ελληνικά, Русский текст, ﬁle",
        'json: {"name": "caf\\u00e9", "path": "a\\/b"}',
    ],
)
def test_look_alikes_stay(text: str) -> None:
    assert secrets.mask_text(text) == text


def test_inside_masking_keeps_the_rest_of_a_value_readable() -> None:
    policy = secrets.default_policy()
    value = "https://oauth2:glpat-" + "Zq7ownPw81xAbCd1234" + "@gitlab.example/models/x"
    assert (
        policy.shown("--model-path", value) == "https://oauth2:[redacted]@gitlab.example/models/x"
    )
    assert policy.shown("HF_TOKEN", "anything") == secrets.REDACTED
    assert policy.shown("ANY", GHP) == secrets.REDACTED  # the value is the credential
