"""The one secret policy: names, the harder shapes of issue 16, masking and JSON masking."""

from __future__ import annotations

import json

import pytest

from reporter import secrets

# Built from parts so that no secret scanner mistakes the test data for a real credential.
PW = "Hunter" + "2-" + "xQ9z"
TOKEN = "Zq3" * 6 + "Wk9" * 6


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("VLLM_PASS", True),
        ("NCCL_KEY", True),
        ("MYSQL_PWD", True),
        ("SGLANG_ROUTER_TOKEN_V2", True),
        ("SGLANG_SECRET_SALT", True),
        ("PGPASSWORD", True),
        ("--admin-pass", True),
        ("--pass", True),
        ("--auth", True),
        ("--sas", True),
        ("-p", True),
        ("-a", True),
        ("apiKey", True),
        ("X-Api-Key", True),
        ("Authorization", True),
        ("auth", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("MAX_NEW_TOKENS", False),
        ("pad_token", False),
        ("--tokenizer-path", False),
        ("--max-total-tokens", False),
        ("cache_key", False),
        ("SSH_AUTH_SOCK", False),
        ("PWD", False),
        ("bypass", False),
        ("key", False),
        ("-m", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert secrets.is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        (f"mysql -u app -p {PW} db", PW),
        (f"redis-cli -a {PW} ping", PW),
        (f"mysql -p{PW}", PW),
        (f"relay --admin-pass {PW} --tp 2", PW),
        (f"relay --sas=sv-{PW}", f"sv-{PW}"),
        (f"VLLM_PASS={PW}", PW),
        (f"NCCL_KEY={PW}", PW),
        (f"MYSQL_PWD={PW}", PW),
        (f"cache at redis://:{PW}@cache-0:6379/0", PW),
        (f"GET https://x.example/v1?page=2&key={TOKEN}&y=1", TOKEN),
        (f"PUT https://a.blob.core.windows.net/c/f?sv=2022&sig={TOKEN}%3D", TOKEN),
        (f"user=svc&authorization=Bearer%20{TOKEN}&x=1", TOKEN),
        (f"hook https://discord.com/api/webhooks/123456789012345678/{TOKEN}", TOKEN),
        (f"Server=tcp:db;User ID=svc;Password={PW};", PW),
        (f"Endpoint=sb://x/;SharedAccessKey={TOKEN}=", TOKEN),
        (f'headers: {{"Authorization": "Token {TOKEN}"}}', TOKEN),
        (f'            auth: ("admin", "{PW}")', PW),
        (f"kwargs: {{'timeout': 30, 'password': '{PW}'}}", PW),
        (f"request headers: X-Api-Key: {TOKEN}", TOKEN),
        (f"curl -u admin:{PW} https://x.example/", PW),
    ],
)
def test_harder_shapes_are_masked(text: str, hidden: str) -> None:
    masked = secrets.mask_text(text)
    assert hidden not in masked, masked
    assert secrets.REDACTED in masked
    assert secrets.mask_text(masked) == masked  # idempotent: masked text scans clean


@pytest.mark.parametrize(
    "text",
    [
        "python -m sglang.launch_server --tp 4 --port 30000 --max-total-tokens 65536",
        "docker run -p 8000:8000 image",
        "TOKENIZERS_PARALLELISM=false",
        'pad_token: "<|endoftext|>"',
        "cc -pthread -O2 x.c",
        "https://github.com/sgl-project/sglang/issues?q=hang&page=2",
        "commit 8f1c2d3e4b5a69788796a5b4c3d2e1f0a9b8c7d6",
    ],
)
def test_clean_text_is_left_alone(text: str) -> None:
    assert secrets.mask_text(text) == text


def test_whole_values_and_in_place_masking() -> None:
    assert secrets.mask_value("VLLM_PASS", "anything") == secrets.REDACTED
    assert secrets.is_secret("ANY", f"postgres://app:{PW}@db/x")
    assert not secrets.is_secret("ANY", "/usr/local/cuda/lib64")
    assert secrets.is_secret("--user", f"admin:{PW}")
    policy = secrets.default_policy()
    assert policy.shown("OTEL_HEADERS", f"x=1,authorization=Basic {TOKEN}") == (
        "x=1,authorization=Basic [redacted]"
    )


def test_extra_names_and_values_extend_the_policy() -> None:
    policy = secrets.policy_from(["MYCORP_*_CRED"], [r"mycorp_[a-z0-9]{8}"])
    assert policy.is_secret("MYCORP_DB_CRED", "x")
    assert policy.is_secret("ANY", "id mycorp_abcd1234")
    assert not policy.is_secret("ANY", "mycorp")


def test_mask_data_masks_decoded_strings_and_keys() -> None:
    line = json.dumps({"password": PW})
    data = {"lines": [f"log {line}"], f"--api-key {TOKEN}": 1, "n": 3}
    masked = secrets.mask_data(data)
    text = json.dumps(masked)
    assert PW not in text and TOKEN not in text
    assert masked == {
        "lines": ['log {"password": "[redacted]"}'],
        "--api-key [redacted]": 1,
        "n": 3,
    }


def test_mask_data_handles_deep_nesting_without_recursion() -> None:
    deep: object = f"token={TOKEN}"
    for _ in range(5000):
        deep = [deep]
    masked = secrets.mask_data(deep)
    for _ in range(5000):
        assert isinstance(masked, list)
        masked = masked[0]
    assert masked == "token=[redacted]"


def test_long_texts_are_masked_in_pieces_without_splitting_lines() -> None:
    text = ("x" * 100 + "\n") * 2000 + f"api_key={TOKEN}\n"
    assert TOKEN not in secrets.mask_text(text)
