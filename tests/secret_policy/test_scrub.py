"""Secret redaction at capture, with the project's shared rules (reporter/data/env.toml)."""

from __future__ import annotations

from reporter.secrets import scrub

DETECTOR = scrub.default_detector()
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


def test_environ() -> None:
    data = (
        f"HF_TOKEN=hf_{'x' * 30}\x00NCCL_DEBUG=INFO\x00GH={GH}\x00TOKENIZERS_PARALLELISM=false\x00"
        "EMPTY=\x00"
    ).encode()
    scrubbed, count = scrub.scrub_environ(data, DETECTOR)
    assert count == 2
    assert scrubbed.split(b"\x00") == [
        b"HF_TOKEN=[redacted]",
        b"NCCL_DEBUG=INFO",
        b"GH=[redacted]",
        b"TOKENIZERS_PARALLELISM=false",
        b"EMPTY=",
        b"",
    ]


def test_argv() -> None:
    argv = (
        "python3",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "sk-" + "a" * 30,
        "--tp",
        "4",
        f"--hf-token={GH}",
        GH,
    )
    scrubbed, count = scrub.scrub_argv(argv, DETECTOR)
    assert count == 3
    assert scrubbed == (
        "python3",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "[redacted]",
        "--tp",
        "4",
        "--hf-token=[redacted]",
        "[redacted]",
    )


def test_cmdline_keeps_bytes_when_clean() -> None:
    data = b"sglang::scheduler_TP0" + b"\x00" * 100
    assert scrub.scrub_cmdline(data, DETECTOR) == (b"sglang::scheduler_TP0\x00", 0)
    dirty = b"python\x00--api-key\x00supersecret\x00"
    assert scrub.scrub_cmdline(dirty, DETECTOR) == (b"python\x00--api-key\x00[redacted]\x00", 1)


def test_locals() -> None:
    text = (
        'Thread 7982 (idle): "MainThread"\n'
        "    handle_request (myapp/workers.py:35)\n"
        "        Arguments:\n"
        '            request_id: "req-123"\n'
        f'            api_key: "{GH}"\n'
        "        Locals:\n"
        f'            header: "Bearer {GH}"\n'
        "            retries: 5\n"
        "    <module> (threads_app.py:15)\n"
        f"    token_of (x.py:1)\n"
    )
    scrubbed, count = scrub.scrub_locals(text, DETECTOR)
    assert count == 2
    assert "            api_key: [redacted]" in scrubbed
    # Masked inside: the scheme stays, so the reader still sees what the value was.
    assert '            header: "Bearer [redacted]"' in scrubbed
    assert '            request_id: "req-123"' in scrubbed
    assert GH not in scrubbed
    assert scrubbed.count("\n") == text.count("\n")


def test_secrets_inside_other_values_are_masked_in_place() -> None:
    basic = "Basic dXNlcjpwYXNzd29yZDEyMw=="
    data = (
        f"OTEL_EXPORTER_OTLP_HEADERS=x-tenant=1,authorization={basic}\x00"
        "DATABASE_URL=postgres://app:pw12345@db:5432/x\x00PATH=/usr/bin\x00"
    ).encode()
    scrubbed, count = scrub.scrub_environ(data, DETECTOR)
    assert count == 2
    assert scrubbed.split(b"\x00")[:3] == [
        # The shared secret shapes hide the credential and keep the rest ...
        b"OTEL_EXPORTER_OTLP_HEADERS=x-tenant=1,authorization=Basic [redacted]",
        # ... and so does a password in a URL: the host and database stay readable.
        b"DATABASE_URL=postgres://app:[redacted]@db:5432/x",
        b"PATH=/usr/bin",
    ]
    argv, count = scrub.scrub_argv(
        ("--otlp-headers", f"authorization={basic}", "--model-path", "/models/Qwen3-8B"), DETECTOR
    )
    assert argv == (
        "--otlp-headers",
        "authorization=Basic [redacted]",
        "--model-path",
        "/models/Qwen3-8B",
    )
    assert count == 1


def test_detector_mask_merges_overlapping_hits() -> None:
    detector = scrub.SecretDetector(
        is_secret=lambda _n, _v: False, spans=lambda _t: [(8, 10), (0, 4), (2, 6)]
    )
    assert detector.mask("abcdefghijkl") == ("[redacted]gh[redacted]kl", 2)
    quiet = scrub.SecretDetector(is_secret=lambda _n, _v: False, spans=lambda _t: [])
    assert quiet.value("x", "plain") == ("plain", 0)
