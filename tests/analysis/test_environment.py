"""The allowlisted, redacted environment view and the secret rules behind it."""

from __future__ import annotations

import pytest

from reporter.analysis.environment import (
    REDACTED,
    default_rules,
    parse_show_rules,
    summarize,
)
from reporter.core.errors import ReporterError
from reporter.model import (
    CommandFlag,
    CommandLine,
    EnvFact,
    Environment,
    EnvVar,
    Gpu,
    Location,
    Package,
)
from reporter.model.document import data


def summary_json(value: object) -> dict[str, object]:
    """The `environment` record's JSON data (the summary is its own document)."""
    out: dict[str, object] = data(value)
    return out


# Built from parts so that no secret scanner mistakes the test data for a real credential.
FAKE_HF = "hf_" + "Q" * 12 + "z" * 12
FAKE_GH = "ghp_" + "a1B2" * 6
FAKE_AWS = "AKIA" + "ABCDEFGHIJ234567"
OPAQUE = "Zq3" * 6 + "Wk9" * 6


def _var(name: str, value: str, path: str = "environ") -> EnvVar:
    return EnvVar(name=name, value=value, source=Location(path=path, line=1))


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("HF_TOKEN", "x", True),
        ("GITHUB_TOKEN", "x", True),
        ("OPENAI_API_KEY", "x", True),
        ("AWS_SECRET_ACCESS_KEY", "x", True),
        ("DB_PASSWORD", "x", True),
        ("--api-key", "x", True),
        ("TOKENIZERS_PARALLELISM", "false", False),
        ("SGLANG_MAX_NEW_TOKENS", "4096", False),
        ("--tokenizer-path", "/models/x", False),
        ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1", False),
        ("ANY", FAKE_HF, True),
        ("ANY", FAKE_GH, True),
        ("ANY", FAKE_AWS, True),
        ("ANY", "postgres://user:pw@db:5432/x", True),
        ("ANY", "Bearer " + "x" * 20, True),
        ("ANY", OPAQUE, True),
        ("ANY", "deadbeef" * 5, False),  # hex: a commit id, not a token
        ("ANY", "/usr/local/cuda/lib64:/usr/lib", False),
        ("ANY", "https://example.org/path", False),
        ("ANY", "", False),
    ],
)
def test_secrets(name: str, value: str, secret: bool) -> None:
    assert default_rules().secrets.is_secret(name, value) is secret


def test_summary_allowlists_hides_and_redacts() -> None:
    environment = Environment(
        variables=(
            _var("NCCL_DEBUG", "INFO", "rank0.environ"),
            _var("NCCL_DEBUG", "WARN", "rank1.environ"),
            _var("CUDA_VISIBLE_DEVICES", "0", "rank0.environ"),
            _var("SGLANG_API_KEY", "whatever"),
            _var("SGLANG_LOG_LEVEL", FAKE_HF),
            _var("SGLANG_ROUTER_SERVICE_HOST", "10.96.0.1"),
            _var("SGLANG_ROUTER_PORT", "tcp://10.96.0.1:30000"),
            _var("HOME", "/root"),
            _var("PATH", "/usr/bin"),
        )
    )
    summary = summarize(environment)
    shown = {v.name: v.values for v in summary.variables}
    assert list(shown) == [
        "CUDA_VISIBLE_DEVICES",
        "NCCL_DEBUG",
        "SGLANG_API_KEY",
        "SGLANG_LOG_LEVEL",
    ]
    assert shown["NCCL_DEBUG"] == ("INFO", "WARN")
    assert shown["SGLANG_API_KEY"] == (REDACTED,)
    assert shown["SGLANG_LOG_LEVEL"] == (REDACTED,)
    assert (summary.hidden, summary.redacted) == (4, 2)
    nccl = next(v for v in summary.variables if v.name == "NCCL_DEBUG")
    assert nccl.sources == ("rank0.environ", "rank1.environ")
    assert "whatever" not in str(summary_json(summary))


def test_commands_packages_gpus_and_facts() -> None:
    where = Location(path="x", line=1)
    environment = Environment(
        cmdlines=(
            CommandLine(
                argv=("srv", "--api-key", "k", "--tp", "4"),
                program="srv",
                flags=(
                    CommandFlag(name="--api-key", value="k"),
                    CommandFlag(name="--tp", value="4"),
                ),
                source=where,
            ),
            CommandLine(argv=("srv", "--api-key", "k", "--tp", "4"), program="srv", source=where),
        ),
        packages=(
            Package(name="numpy", version="2.0", source=where),
            Package(name="torch", version="2.8.0+cu126", source=where),
            Package(name="torch", version="2.8.0", source=where),
            Package(name="zzz-unlisted", version="1", source=where),
        ),
        gpus=(
            Gpu(index=1, name="H100", source=where),
            Gpu(index=0, name="H100", source=where),
            Gpu(index=0, name="H100", memory_used_mib=1, memory_total_mib=2, source=where),
        ),
        facts=(
            EnvFact(key="CUDA available", value="True", source=where),
            EnvFact(key="GPU 0,1 Compute Capability", value="9.0", source=where),
            EnvFact(key="Some noise", value="x", source=where),
        ),
    )
    summary = summarize(environment)
    (command,) = summary.commands  # identical argv shown once
    assert [(f.name, f.value) for f in command.flags] == [("--api-key", REDACTED), ("--tp", "4")]
    assert [(p.name, p.version, p.others) for p in summary.packages] == [
        ("torch", "2.8.0+cu126", ("2.8.0",)),
        ("numpy", "2.0", ()),
    ]
    assert summary.package_count == 3
    assert [(g.index, g.memory_total_mib) for g in summary.gpus] == [(0, 2), (1, None)]
    assert [f.key for f in summary.facts] == ["CUDA available", "GPU 0,1 Compute Capability"]
    data = summary_json(summary)
    assert list(data) == [
        "variables",
        "hidden_variables",
        "redacted_variables",
        "commands",
        "packages",
        "package_count",
        "gpus",
        "facts",
        "sources",
    ]


def test_empty_environment_is_falsy() -> None:
    assert not summarize(Environment())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[show\n", "not valid TOML"),
        ('[show]\nnames = "x"\n', "`show.names` must be a list of strings"),
        ("[secret]\nvalues = ['(']\n", "[secret] value pattern"),
        ("[secret]\nopaque_min_length = 2\n", "opaque_min_length"),
    ],
)
def test_bad_rules(text: str, message: str) -> None:
    with pytest.raises(ReporterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_show_rules(text)
