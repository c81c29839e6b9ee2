"""Needles: a pattern is skipped for a batch of texts only when it can match none of them."""

from __future__ import annotations

import copy
import random
import re

import pytest

from reporter import secrets
from reporter.secrets import shapes
from reporter.secrets.needles import Haystack, may_match, needle_groups

# Texts that hold (or almost hold) each shape, in several spellings: the test below checks
# that every pattern matching one of them keeps its needles there.
_SECRETS = [
    "GH=ghp_" + "a1B2" * 9,
    "t=github_pat_" + "A1b2C3d4E5f6G7h8I9j0K1_" + "x" * 59,
    "hf_" + "AbC1" * 9,
    "sk-ant-api03-" + "Ab1_" * 10,
    "key sk-proj-" + "Ab1-" * 10,
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SECRET_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "xoxb-1234567890-abcdefghij",
    "https://hooks.slack.com/services/T0000/B0000/abcdefghijklmnop",
    "sk_live_" + "a1" * 12,
    "AIza" + "b" * 35,
    "GOCSPX-" + "a1" * 12,
    "glpat-" + "x1" * 10,
    "npm_" + "a" * 36,
    "pypi-AgEIcHlwaS5vcmc" + "x" * 30,
    "SG." + "a" * 22 + "." + "b" * 43,
    "dapi" + "0a" * 16,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "Authorization: Bearer 0123456789abcdefghijKLMN",
    "AUTHORIZATION: BEARER 0123456789ABCDEFGHIJKLMN",
    "authorization=basic dXNlcjpwYXNzd29yZA==",
    "Proxy-Authorization: Token abcdefghij0123456789",
    "curl -H Authorization:Bearer%20abcdefghijklmnop",
    "postgres://svc:s3cr3t-pw@db.internal/x",
    "AccountKey=" + "Ab1+" * 10 + "==",
    "https://x.blob.core.windows.net/c?sv=1&sig=" + "Ab1%2B" * 6,
    "Cookie: session=abcdefgh12345678",
    "set-cookie: id=abcdefgh12345678; Path=/",
    "https://discord.com/api/webhooks/123456789/abcdefghijklmnopqrstuvwxyz",
    "https://open.feishu.cn/open-apis/bot/v2/hook/0123456789abcdef",
    "GET /v1?api_key=abcdef123456&x=1",
    "GET /v1;TOKEN=abcdef123456",
    "serve --api-key Xy7zQ1w2e3r4t5 --tp 4",
    "serve --hf-token=abc123def456",
    "mysql -pS3cretPass db",
    "curl -u admin:hunter22 http://x",
    "curl --user=admin:hunter22 http://x",
    "retry with password=Hunter2-x",
    '"client_secret": "c2VjcmV0LXZhbHVl"',
    "NCCL_KEY => abcdef012345",
    'auth = ("user", "hunter2hunter2")',
    "AUTH: ['user', 'hunter2hunter2']",
    "Server=db;Database=x;User Id=sa;Password=Hunter2Hunter2;",
    "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=Ab1/Ab1/Ab1/Ab1/=",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEab\ncd==\n-----END RSA PRIVATE KEY-----",
    "KEY=-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Blbn\\n-----END OPENSSH PRIVATE KEY-----",
]
# Not secrets, but shaped like the text around them: process titles, frames, rank details.
_ORDINARY = [
    "sglang::scheduler_TP3",
    "rank 3 from TP3 (process title sglang::scheduler_TP3)",
    "rank:1000",
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    'Thread 100010 (idle): "watchdog"',
    "max_new_tokens=128 pad_token=0",
    "python -m sglang.launch_server --tp 4 --port 30000",
]


def _spellings(text: str) -> list[str]:
    """`text` as written, in other cases, and with characters that re's case folding
    equates with ASCII letters (dotless i, long s, Kelvin sign)."""
    odd = text.replace("i", "\u0131").replace("s", "\u017f").replace("k", "\u212a")
    return [text, text.upper(), text.lower(), text.swapcase(), odd, f"\u00e9 {text} \u00e9"]


_CORPUS = [s for text in _SECRETS + _ORDINARY for s in _spellings(text)]


@pytest.mark.parametrize("entry", shapes.SECRET_PATTERNS, ids=lambda e: e.kind)
def test_a_pattern_that_matches_keeps_its_needles(entry: shapes.SecretPattern) -> None:
    groups = needle_groups(entry.pattern)
    matched = [text for text in _CORPUS if entry.pattern.search(text)]
    assert matched, f"no text of the corpus matches {entry.kind}: add one"
    for text in matched:
        assert may_match(groups, Haystack([text])), (entry.kind, text)
        assert may_match(groups, Haystack(["unrelated", text, "text"])), (entry.kind, text)


def test_needles_rule_out_patterns_for_ordinary_text() -> None:
    possible = {p.kind for p in shapes.possible(_ORDINARY)}
    assert "huggingface-token" not in possible
    assert "private-key" not in possible
    assert "bearer-token" not in possible
    # `:` and `=` are everywhere: named assignments stay possible.
    assert "secret-assignment" in possible


@pytest.mark.parametrize(
    ("pattern", "groups"),
    [
        (r"\bhf_[A-Za-z0-9]{20,}", ((("hf_", False),),)),
        (r"(?i)\bbearer\s+x", ((("bearer", True),), (("x", True),))),
        (r"(?:ab|cd)e", ((("ab", False), ("cd", False)), (("e", False),))),
        # An optional part, or an alternative without literal text, gives no needle.
        (r"(?:xyz)?a", ((("a", False),),)),
        (r"(?:xyz|\d+)", ()),
        (r"[:=]", (((":", False), ("=", False)),)),
        (r"[^:=]", ()),
        (r"(?i:K)\u00e9", ((("k", True),), (("\u00e9", False),))),
        # A non-ASCII literal under case folding gives none (the Kelvin sign folds to k).
        (r"(?i:\u212a)\u00e9", ((("\u00e9", False),),)),
    ],
)
def test_needle_groups(pattern: str, groups: tuple[object, ...]) -> None:
    assert needle_groups(re.compile(pattern)) == groups


def test_case_folding_needles_are_not_trusted_on_other_text() -> None:
    # `(?i)i` matches the dotless i (U+0131): on text that is not ASCII a case-insensitive needle
    # that is absent proves nothing.
    pattern = re.compile(r"(?i)authorization")
    assert pattern.search("\u0131 AUTHOR\u0131ZAT\u0131ON")
    assert may_match(needle_groups(pattern), Haystack(["\u0131 AUTHOR\u0131ZAT\u0131ON"]))
    assert not may_match(needle_groups(pattern), Haystack(["AUTHOR-IZATION"]))


def test_mask_data_masks_as_each_string_alone() -> None:
    rng = random.Random(5)
    many = [f"{rng.choice(_CORPUS)} #{n}" for n in range(5000)]
    document = {"a": many, "b": {text: [text, 1, None] for text in _SECRETS}, "c": _ORDINARY}
    masked = secrets.mask_data(copy.deepcopy(document))  # it masks in place
    # Over 4,000 distinct strings: our own shapes only, as `mask_text(library=False)`.
    assert masked == {
        "a": [secrets.mask_text(t, library=False) for t in many],
        "b": {
            secrets.mask_text(t, library=False): [secrets.mask_text(t, library=False), 1, None]
            for t in _SECRETS
        },
        "c": [secrets.mask_text(t, library=False) for t in _ORDINARY],
    }
    assert masked["a"] != many  # something was masked


def test_mask_data_small_documents_use_every_detector() -> None:
    document = {"x": list(_SECRETS), "y": list(_ORDINARY)}
    assert secrets.mask_data(document) == {
        "x": [secrets.mask_text(t) for t in _SECRETS],
        "y": [secrets.mask_text(t) for t in _ORDINARY],
    }
