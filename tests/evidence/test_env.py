"""Environment evidence parsers: environ, cmdline, packages, check_env, collect_env, nvidia-smi, sha256sum."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.evidence import env
from reporter.model import CommandFlag, EvidenceKind, Location, ParseResult

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "fixtures" / "synthetic" / "env"
ENVDIFF = ROOT / "fixtures" / "envdiff"


def _messages(result: ParseResult) -> list[str]:
    return [str(w) for w in result.warnings]


# --------------------------------------------------------------------------- environ


@pytest.mark.parametrize(
    ("text", "expected", "warned"),
    [
        ("A=1\x00B=two words\x00", [("A", "1"), ("B", "two words")], []),
        ("A=1\x00B=x=y\x00\x00", [("A", "1"), ("B", "x=y")], []),
        ("A=\x00", [("A", "")], []),
        ("A=1\x00junk\x00C=3\x00", [("A", "1"), ("C", "3")], ["e:2: entry 2 is not NAME=VALUE"]),
        ("A=1\x00A=2\x00", [("A", "1")], ["e:2: A is set again; the first value (line 1)"]),
        ("A=1\nB=2\n", [("A", "1"), ("B", "2")], []),
        ('export A=1\ndeclare -x B="q \\"x\\""\n', [("A", "1"), ("B", 'q "x"')], []),
        ("# comment\n\nA='single'\n", [("A", "single")], []),
        ('A="open\n', [("A", '"open')], ["e:1: A: unbalanced quote"]),
        (
            "A=line one\nline two\nB=2\n",
            [("A", "line one\nline two"), ("B", "2")],
            ["e:2: not NAME=VALUE; kept as a continuation of A"],
        ),
        ("  not an assignment\n", [], ["e:1: not NAME=VALUE"]),
        ("A.B=1\n", [], ["e:1: not NAME=VALUE"]),
    ],
)
def test_environ(text: str, expected: list[tuple[str, str]], warned: list[str]) -> None:
    result = env.parse_environ(text, source="e")
    assert [(v.name, v.value) for v in result.environment.variables] == expected
    messages = _messages(result)
    assert len(messages) == len(warned), messages
    for message, prefix in zip(messages, warned, strict=True):
        assert message.startswith(prefix), message


def test_real_proc_environ_copy() -> None:
    result = env.parse_environ(
        (ENVDIFF / "bad" / "proc" / "environ").read_text(encoding="utf-8"), source="environ"
    )
    names = {v.name: v.value for v in result.environment.variables}
    assert len(names) == 338
    assert names["SGLANG_SM120_MMA_TARGET_CTAS"] == "512"
    assert not result.warnings
    first = result.environment.variables[0]
    assert first.source == Location(path="environ", line=1)


# --------------------------------------------------------------------------- cmdline


def _flags(*pairs: tuple[str, str | None]) -> tuple[CommandFlag, ...]:
    return tuple(CommandFlag(name=n, value=v) for n, v in pairs)


@pytest.mark.parametrize(
    ("argv", "program", "flags", "positional"),
    [
        (
            ("python3", "-m", "sglang.launch_server", "--tp", "4", "--mem-fraction-static=0.8"),
            "sglang.launch_server",
            _flags(("--tp", "4"), ("--mem-fraction-static", "0.8")),
            (),
        ),
        (
            ("/usr/bin/python3.11", "-u", "-X", "faulthandler", "serve.py", "--enable-metrics"),
            "serve.py",
            _flags(("--enable-metrics", None)),
            (),
        ),
        (
            ("python", "-msglang.launch_server", "--cuda-graph-bs", "1", "2", "4", "--x"),
            "sglang.launch_server",
            _flags(("--cuda-graph-bs", "1 2 4"), ("--x", None)),
            (),
        ),
        (
            ("env", "A=1", "B=2", "vllm", "serve", "model", "--tensor-parallel-size", "2"),
            "vllm",
            _flags(("--tensor-parallel-size", "2")),
            ("serve", "model"),
        ),
        (
            ("server", "--offset", "-1", "--scale", "-0.5", "--", "--not-a-flag"),
            "server",
            _flags(("--offset", "-1"), ("--scale", "-0.5")),
            ("--not-a-flag",),
        ),
        (("python3",), "python3", (), ()),
        (("env", "A=1"), "", (), ()),
        (("python3", "-c", "print(1)", "--flag"), "-c", _flags(("--flag", None)), ()),
    ],
)
def test_split_command(
    argv: tuple[str, ...],
    program: str,
    flags: tuple[CommandFlag, ...],
    positional: tuple[str, ...],
) -> None:
    cmd = env.split_command(argv, source=Location(path="c", line=1))
    assert (cmd.program, cmd.flags, cmd.positional) == (program, flags, positional)


def test_cmdline_nul_and_text_forms() -> None:
    nul = env.parse_cmdline("python3\x00-m\x00sglang.launch_server\x00--tp\x004\x00", source="c")
    (cmd,) = nul.environment.cmdlines
    assert cmd.argv == ("python3", "-m", "sglang.launch_server", "--tp", "4")
    assert cmd.flags == _flags(("--tp", "4"))
    text = env.parse_cmdline("python3 -m x --model-path '/m/a b' --tp 2\n# note\n", source="c")
    (cmd,) = text.environment.cmdlines
    assert cmd.flags == _flags(("--model-path", "/m/a b"), ("--tp", "2"))
    broken = env.parse_cmdline("python3 x.py --name 'unclosed\n", source="c")
    assert len(broken.environment.cmdlines) == 1
    assert _messages(broken)[0].startswith("c:1: No closing quotation; split on spaces")
    assert _messages(env.parse_cmdline("\x00\x00", source="c")) == ["c: empty cmdline"]
    assert _messages(env.parse_cmdline("\n\n", source="c")) == ["c: no command line"]


def test_real_proc_cmdline_copy() -> None:
    result = env.parse_cmdline(
        (ENVDIFF / "bad" / "proc" / "cmdline").read_text(encoding="utf-8"), source="cmdline"
    )
    (cmd,) = result.environment.cmdlines
    assert cmd.program.endswith("fixtures/envdiff/serve.py")
    flags = dict((f.name, f.value) for f in cmd.flags)
    assert flags["--tp"] == "4"
    assert flags["--mem-fraction-static"] == "0.8"
    assert flags["--cuda-graph-bs"] == "1 2 4 8"
    assert flags["--enable-metrics"] is None


def test_flag_map_joins_repeats_and_names_the_program() -> None:
    one = env.split_command(("srv", "--a", "1", "--b"), source=Location(path="x"))
    two = env.split_command(("srv", "--a", "2"), source=Location(path="y"))
    assert env.flag_map([one, two]) == {"program": "srv", "--a": "1, 2", "--b": ""}


# --------------------------------------------------------------------------- packages


@pytest.mark.parametrize(
    ("text", "expected", "warnings"),
    [
        (
            "numpy==1.26.4\nTorch==2.5.1+cu124\n",
            [("numpy", "1.26.4", ""), ("torch", "2.5.1+cu124", "")],
            0,
        ),
        ("Flash_Infer.Python===0.2\n", [("flash-infer-python", "0.2", "")], 0),
        ("pkg[extra]==1.0\n", [("pkg", "1.0", "")], 0),
        (
            "x @ file:///w/x_lib-1.2.3-py3-none-any.whl\n",
            [("x", "1.2.3", "file:///w/x_lib-1.2.3-py3-none-any.whl")],
            0,
        ),
        (
            "-e git+https://github.com/o/r.git@abc1234#egg=r_pkg&subdirectory=python\n",
            [("r-pkg", "", "git+https://github.com/o/r.git@abc1234#egg=r_pkg&subdirectory=python")],
            0,
        ),
        (
            "# Editable install with no version control (mylib==0.1)\n-e /src/mylib\n",
            [("mylib", "0.1", "/src/mylib")],
            0,
        ),
        ("-e /src/anonymous\n", [], 1),
        ("numpy==1\nWARNING: something\nnot a line at all\n", [("numpy", "1", "")], 1),
    ],
)
def test_pip_freeze(text: str, expected: list[tuple[str, str, str]], warnings: int) -> None:
    result = env.parse_packages(text, source="f")
    assert [(p.name, p.version, p.origin) for p in result.environment.packages] == expected
    assert len(result.warnings) == warnings, result.warnings


def test_pip_list_forms() -> None:
    columns = env.parse_packages((SYNTHETIC / "pip_list.txt").read_text(), source="l")
    versions = {p.name: (p.version, p.origin) for p in columns.environment.packages}
    assert versions["sglang"] == ("0.5.2", "/opt/src/sglang/python")
    assert versions["torch"] == ("2.8.0+cu126", "")
    assert not columns.warnings
    as_json = env.parse_packages((SYNTHETIC / "pip_list.json").read_text(), source="j")
    assert [p.name for p in as_json.environment.packages] == ["numpy", "sglang", "torch"]
    broken = env.parse_packages('[{"name": "a", "version": "1"}, {"nope": 1}', source="j")
    assert not broken.environment.packages
    assert "not valid JSON" in _messages(broken)[0]
    odd = env.parse_packages('[{"name": "a", "version": "1"}, 5]', source="j")
    assert [p.name for p in odd.environment.packages] == ["a"]
    assert _messages(odd) == ["j:1: item 2 has no package name"]
    bad_row = env.parse_packages("Package Version\n------- -------\nok 1.0\nbroken\n", source="l")
    assert [p.name for p in bad_row.environment.packages] == ["ok"]
    assert _messages(bad_row)[0].startswith("l:4: line not understood as a `pip list` row")


def test_real_pip_freeze() -> None:
    result = env.parse_packages((ENVDIFF / "bad" / "pip-freeze.txt").read_text(), source="f")
    names = {p.name: p.version for p in result.environment.packages}
    assert names["torch"] == "2.13.0+cpu"
    assert not result.warnings


# --------------------------------------------------------------------------- check_env / collect_env


def test_sglang_check_env() -> None:
    result = env.parse_sglang_check_env(
        (SYNTHETIC / "sglang_check_env.txt").read_text(), source="s"
    )
    packages = {p.name: p.version for p in result.environment.packages}
    assert packages["sglang"] == "0.5.2"
    assert packages["torch"] == "2.8.0+cu126"
    assert packages["sgl-kernel"] == "0.3.9.post2"
    assert "vllm" not in packages  # "Module Not Found"
    facts = {f.key: f.value for f in result.environment.facts}
    assert facts["CUDA available"] == "True"
    assert facts["CUDA Driver Version"] == "560.35.03"
    assert facts["NVIDIA Topology"].splitlines()[1].startswith("GPU0")
    assert facts["Legend"].startswith("  X    = Self")
    assert [g.index for g in result.environment.gpus] == [0, 1, 2, 3]
    assert not result.warnings


@pytest.mark.parametrize("name", ["vllm_collect_env_sectioned.txt", "vllm_collect_env_old.txt"])
def test_vllm_collect_env(name: str) -> None:
    result = env.parse_vllm_collect_env((SYNTHETIC / name).read_text(), source="v")
    packages = {p.name: p.version for p in result.environment.packages}
    assert packages["vllm"] in ("0.10.1.1", "0.6.6.post1")
    assert packages["torch"].endswith(("+cu128", "+cu124"))  # the PyTorch line wins over [pip3]
    assert "nvidia-nccl-cu12" in packages
    assert not any(name.startswith("cpu") for name in packages)
    assert len(result.environment.gpus) == 2
    variables = {v.name for v in result.environment.variables}
    assert variables & {"NCCL_CUMEM_ENABLE", "NCCL_P2P_DISABLE"}
    facts = {f.key for f in result.environment.facts}
    assert "Nvidia driver version" in facts
    assert not result.warnings


def test_collect_env_unplaceable_line_is_a_warning() -> None:
    result = env.parse_vllm_collect_env(
        "Collecting environment information...\nOS: Linux\n%%% garbage %%%\n", source="v"
    )
    assert _messages(result) == [
        "v:3: line not understood as vLLM `collect_env` output: '%%% garbage %%%'"
    ]


# --------------------------------------------------------------------------- nvidia-smi, sha256sum


def test_nvidia_smi_table() -> None:
    result = env.parse_nvidia_smi((SYNTHETIC / "nvidia_smi.txt").read_text(), source="n")
    gpus = result.environment.gpus
    assert [(g.index, g.memory_used_mib, g.memory_total_mib, g.utilization_pct) for g in gpus] == [
        (0, 76214, 81559, 0),
        (1, 76214, 81559, 0),
        (2, 76206, 81559, 0),
        (3, 76206, 81559, 0),
    ]
    assert gpus[0].name == "NVIDIA H100 80GB HBM3"
    facts = {f.key: f.value for f in result.environment.facts}
    assert facts["NVIDIA driver version"] == "560.35.03"
    assert facts["GPU 0 process 26038"] == "sglang::scheduler_TP0 (76198 MiB)"
    assert not result.warnings


def test_nvidia_smi_csv_and_bad_rows() -> None:
    result = env.parse_nvidia_smi((SYNTHETIC / "nvidia_smi_query.csv").read_text(), source="q")
    assert [(g.index, g.memory_used_mib, g.utilization_pct) for g in result.environment.gpus] == [
        (0, 76214, 0),
        (1, 76214, 0),
    ]
    bad = env.parse_nvidia_smi("index, name, memory.used [MiB]\n0, A100\nx, B, 1 MiB\n", source="q")
    assert not bad.environment.gpus
    assert [w.source.line for w in bad.warnings] == [2]
    assert "2 lines" in _messages(bad)[0]


def test_nvidia_smi_unknown_table_line() -> None:
    text = "| NVIDIA-SMI 1.0   Driver Version: 2.0   CUDA Version: 3.0 |\nsomething else\n"
    result = env.parse_nvidia_smi(text, source="n")
    assert _messages(result) == [
        "n:2: line not understood as `nvidia-smi` output: 'something else'"
    ]


def test_source_hashes() -> None:
    good = "a" * 64 + "  ./pkg/x.py\n" + "B" * 64 + " *bin/y\n# comment\nbroken line\n"
    result = env.parse_source_hashes(good, source="h")
    assert [(h.path, h.sha256) for h in result.environment.file_hashes] == [
        ("pkg/x.py", "a" * 64),
        ("bin/y", "b" * 64),
    ]
    assert _messages(result) == ["h:4: line not understood as a `sha256sum` line: 'broken line'"]


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("sglang_check_env.txt", EvidenceKind.SGLANG_CHECK_ENV),
        ("vllm_collect_env_sectioned.txt", EvidenceKind.VLLM_COLLECT_ENV),
        ("vllm_collect_env_old.txt", EvidenceKind.VLLM_COLLECT_ENV),
        ("nvidia_smi.txt", EvidenceKind.NVIDIA_SMI),
        ("nvidia_smi_query.csv", EvidenceKind.NVIDIA_SMI),
        ("pip_list.txt", EvidenceKind.PACKAGES),
        ("pip_list.json", EvidenceKind.PACKAGES),
        ("pip_freeze_direct_refs.txt", EvidenceKind.PACKAGES),
    ],
)
def test_sniff_synthetic_samples(name: str, kind: EvidenceKind) -> None:
    assert env.sniff((SYNTHETIC / name).read_text()) is kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("A=1\x00B=2\x00", EvidenceKind.ENVIRON),
        ("python3\x00-m\x00x\x00", EvidenceKind.CMDLINE),
        ("A=1\x00\x01\x02binary\x00", EvidenceKind.UNKNOWN),
        ("A=1\nB=2\nC=3\n", EvidenceKind.ENVIRON),
        ("python3 -m sglang.launch_server --tp 4\n", EvidenceKind.CMDLINE),
        ("a" * 64 + "  x.py\n", EvidenceKind.SOURCE_HASHES),
        # logfmt logs are KEY=VALUE pairs too, several per line: not an environment.
        (
            "time=1 level=info msg=a\ntime=2 level=info msg=b\ntime=3 level=warn msg=c\n",
            EvidenceKind.UNKNOWN,
        ),
        ("just some prose\nmore prose\n", EvidenceKind.UNKNOWN),
        ("", EvidenceKind.UNKNOWN),
        ('[{"pid": 1, "thread_id": 2, "name": "x", "version": 1}]', EvidenceKind.UNKNOWN),
    ],
)
def test_sniff_shapes(text: str, kind: EvidenceKind) -> None:
    assert env.sniff(text) is kind


def test_parse_rejects_a_non_environment_kind() -> None:
    with pytest.raises(ValueError, match="not an environment evidence kind"):
        env.parse(EvidenceKind.PYSPY_TEXT, "", source="x")


@pytest.mark.parametrize("kind", env.ENV_KINDS)
@pytest.mark.parametrize(
    "garbage",
    ["", "\x00", "\ufeff", "=\x00=\x00", "|||\n+--+\n", "[", "{}", "\t\t\n", "é" * 50, 'A="\n' * 3],
)
def test_garbage_never_raises(kind: EvidenceKind, garbage: str) -> None:
    result = env.parse(kind, garbage, source="g")
    for warning in result.warnings:
        assert warning.source.path == "g"
