"""Parse environment evidence: environ, command lines, package lists, check_env, collect_env, nvidia-smi.

Every parser takes the file's text and the name to cite, and returns a
`ParseResult` whose `environment` holds what it found; lines it cannot place
become warnings with file:line (for NUL-separated `/proc` copies, the entry
number stands in for the line). Nothing here reads files.

Accepted inputs, by example:

* environ: a copy of `/proc/PID/environ` (`A=1` NUL `B=2` NUL), `env` output, or
  `KEY=VALUE` lines with `export ` / `declare -x ` and shell quotes;
* cmdline: a copy of `/proc/PID/cmdline` (`python3` NUL `-m` NUL `sglang.launch_server` NUL ...)
  or one shell-quoted command per line; options become `CommandFlag`s
  (`--tp 4`, `--mem-fraction-static=0.8`, bare `--enable-metrics`);
* packages: `pip freeze` (`name==1.0`, `name @ url`, `-e git+...#egg=name`),
  `pip list` (columns or `--format=json`);
* `python3 -m sglang.check_env` (`sglang: 0.5.2`, `GPU 0,1: NVIDIA H100`);
* vLLM `collect_env.py`, old (`vLLM Version: 0.6.6`) and sectioned
  (`vLLM Version                 : 0.9.1`) layouts, `[pip3] torch==2.7.0`
  lines and its environment-variable tail;
* `nvidia-smi` (the default table, or `--query-gpu=... --format=csv`);
* `sha256sum` output of a deployed source tree.

`sniff(text)` tells these kinds apart from the first 64 KiB: `sniff_distinctive` (markers
no other evidence has) then `sniff_generic` (the shape of the lines); `reporter.evidence.sniff`
runs the two halves before and after the metric and log sniffers.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable

from reporter.evidence._text import Unrecognised, clean_lines, excerpt
from reporter.model import (
    CommandFlag,
    CommandLine,
    EnvFact,
    Environment,
    EnvVar,
    EvidenceKind,
    FileHash,
    Gpu,
    Location,
    Package,
    ParseResult,
    ParseWarning,
)
from reporter.secrets.names import is_secret_name

SNIFF_CHARS = 64 * 1024

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ASSIGN_RE = re.compile(r"(?:export\s+|declare\s+-x\s+)?([A-Za-z_][A-Za-z0-9_.]*)=(.*)\Z")
_PY_RE = re.compile(r"(?:.*/)?(?:python|pypy)[0-9.]*m?\Z")
# Interpreter options that take the next token as their argument.
_PY_ARG_OPTIONS = frozenset(("-W", "-X", "-Q", "--check-hash-based-pycs"))
_NUMBER_RE = re.compile(r"-\d+(?:\.\d+)?(?:e-?\d+)?\Z")

_REQ_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_FREEZE_PIN_RE = re.compile(rf"({_REQ_NAME})(?:\[[^\]]*\])?\s*===?\s*([^\s;#]+)")
_FREEZE_URL_RE = re.compile(rf"({_REQ_NAME})(?:\[[^\]]*\])?\s+@\s+(\S+)")
_EDITABLE_RE = re.compile(r"-e\s+(\S+)")
_EGG_RE = re.compile(r"[#&]egg=([A-Za-z0-9._-]+)")
_EDITABLE_NOTE_RE = re.compile(rf"#\s*Editable.*\(({_REQ_NAME})==([^)\s]+)\)")
_WHEEL_VERSION_RE = re.compile(r"/([A-Za-z0-9_.]+)-(\d[^-/]*)-[^/]*\.whl\Z")
_LIST_HEADER_RE = re.compile(r"Package\s+Version(?:\s|\Z)")
_DASHES_RE = re.compile(r"-{3,}(?:\s+-{3,})+\s*\Z")
_VERSION_RE = re.compile(r"v?\d[\w.+!-]*\Z")

_SHA_LINE_RE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)\Z")

_KV_RE = re.compile(r"([^:=\[\]]*?[^\s:=])\s*:(?:\s+(.*?))?\s*\Z")
_PIP_TAG_RE = re.compile(r"\[(pip3?|conda)\]\s+(.*)\Z")
_GPU_LINE_RE = re.compile(r"GPU ([\d, ]+):\s*(.+?)\s*\Z")
_SECTION_RULE_RE = re.compile(r"={5,}\s*\Z")
_ENV_LINE_RE = re.compile(r"([A-Z_][A-Z0-9_]*)=(.*)\Z")
_LOGFMT_PAIR_RE = re.compile(r"\s[a-z_][a-z0-9_.]*=")

_SMI_HEAD_RE = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?"
)
_SMI_GPU_RE = re.compile(r"\|\s*(\d+)\s+(.+?)\s+(On|Off)\s+\|\s*([0-9A-Fa-f:.]+)\s+(On|Off)\s+\|")
_SMI_USAGE_RE = re.compile(r"\|.*?\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+)%")
_SMI_PROC_RE = re.compile(
    r"\|\s*(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.+?)\s+(\d+)MiB\s*\|\s*\Z"
)
_SMI_BORDER_RE = re.compile(r"[+|][-=+|\s]*\Z")
_SMI_DATE_RE = re.compile(r"\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\s*\Z")
_CSV_FIELD_RE = re.compile(r"([a-z_.]+)(?:\s*\[([^\]]*)\])?\Z")

# check_env prints these names for packages whose import name differs from the PyPI one.
_CHECK_ENV_PACKAGES = {"pytorch": "torch", "sgl_kernel": "sgl-kernel", "flashinfer": "flashinfer"}
# check_env keys that are facts even though the value looks like a version.
_CHECK_ENV_FACTS = frozenset(
    ("python", "cuda driver version", "nvcc", "cuda_home", "ulimit soft", "hypervisor vendor")
)


def normalise_package(name: str) -> str:
    """A distribution name as PyPI compares them: `Flash_Infer.Python` -> `flash-infer-python`."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --------------------------------------------------------------------------- sniffing


def sniff(text: str) -> EvidenceKind:
    """The environment evidence kind of `text`, or UNKNOWN; looks at the first 64 KiB."""
    kind = sniff_distinctive(text)
    return kind if kind is not EvidenceKind.UNKNOWN else sniff_generic(text)


def sniff_distinctive(text: str) -> EvidenceKind:
    """Kinds with unmistakable markers: /proc NUL copies, check_env, collect_env, nvidia-smi,
    `pip list --format=json`. Safe to try before the metric and log sniffers."""
    head = text[:SNIFF_CHARS].lstrip("\ufeff")
    if "\x00" in head:
        return _sniff_nul(head)
    if "Collecting environment information" in head[:2000] or (
        "vLLM Version" in head and "PyTorch version" in head
    ):
        return EvidenceKind.VLLM_COLLECT_ENV
    if re.search(r"^CUDA available: ", head, re.M) and re.search(
        r"^(?:sglang|sgl_kernel|PyTorch): ", head, re.M
    ):
        return EvidenceKind.SGLANG_CHECK_ENV
    if "NVIDIA-SMI " in head and "Driver Version" in head:
        return EvidenceKind.NVIDIA_SMI
    first = next((line.strip() for line in head.split("\n") if line.strip()), "")
    fields = [f.strip() for f in first.split(",")]
    if (
        len(fields) > 1
        and any(f.startswith("name") for f in fields)
        and any(f.startswith(("memory.", "utilization.", "driver_version", "pci.")) for f in fields)
    ):
        return EvidenceKind.NVIDIA_SMI
    if looks_like_pip_json(head):
        return EvidenceKind.PACKAGES
    return EvidenceKind.UNKNOWN


def sniff_generic(text: str) -> EvidenceKind:
    """Kinds told by the shape of their lines: sha256sum, pip freeze / list, KEY=VALUE, a command."""
    head = text[:SNIFF_CHARS].lstrip("\ufeff")
    content = [line.rstrip("\r") for line in head.split("\n") if line.strip()]
    return _sniff_lines(content) if content else EvidenceKind.UNKNOWN


def looks_like_pip_json(head: str) -> bool:
    """`pip list --format=json`: a JSON array of {"name", "version"} objects (not py-spy's)."""
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped.startswith("["):
        return False
    window = stripped[:2000]
    return '"name"' in window and '"version"' in window and '"thread_id"' not in window


def _sniff_nul(head: str) -> EvidenceKind:
    entries = [e for e in head.split("\x00") if e]
    if not entries:
        return EvidenceKind.UNKNOWN
    # A control character other than tab / newline means binary data, not a /proc copy.
    if any(ord(c) < 32 and c not in "\t\n\r" for e in entries[:200] for c in e):
        return EvidenceKind.UNKNOWN
    assigned = sum(1 for e in entries if _ASSIGN_RE.match(e.split("\n", 1)[0]))
    if assigned >= max(1, int(len(entries) * 0.8)) and _ASSIGN_RE.match(entries[0]):
        return EvidenceKind.ENVIRON
    return EvidenceKind.CMDLINE


def _sniff_lines(content: list[str]) -> EvidenceKind:
    sample = content[:400]
    stripped = [line.strip() for line in sample]
    meaningful = [line for line in stripped if not line.startswith("#")]
    if not meaningful:
        return EvidenceKind.UNKNOWN
    if sum(1 for line in meaningful if _SHA_LINE_RE.match(line)) >= max(1, len(meaningful) * 0.8):
        return EvidenceKind.SOURCE_HASHES
    if (
        len(meaningful) > 1
        and _LIST_HEADER_RE.match(meaningful[0])
        and _DASHES_RE.match(meaningful[1])
    ):
        return EvidenceKind.PACKAGES
    pins = sum(
        1
        for line in meaningful
        if _FREEZE_PIN_RE.fullmatch(line)
        or _FREEZE_URL_RE.fullmatch(line)
        or line.startswith("-e ")
    )
    if pins >= 2 and pins >= len(meaningful) * 0.6:
        return EvidenceKind.PACKAGES
    assigned = [line for line in meaningful if _ASSIGN_RE.match(line)]
    # logfmt log lines (`time=... level=info msg=...`) carry more pairs per line.
    logfmt = sum(1 for line in assigned if len(_LOGFMT_PAIR_RE.findall(line)) >= 2)
    if len(assigned) >= 3 and len(assigned) >= len(meaningful) * 0.6 and logfmt * 2 < len(assigned):
        return EvidenceKind.ENVIRON
    if len(meaningful) <= 4 and all(_looks_like_command(line) for line in meaningful):
        return EvidenceKind.CMDLINE
    return EvidenceKind.UNKNOWN


def _looks_like_command(line: str) -> bool:
    """One shell command that runs a server with long options: `python3 -m x --tp 4`."""
    first = line.split(None, 1)[0] if line.split() else ""
    return (
        " --" in line
        and "=" not in first
        and not first.endswith(":")
        and (first.startswith(("/", "./")) or _PY_RE.match(first) is not None or "." in first)
    )


# --------------------------------------------------------------------------- environ


def parse_environ(text: str, *, source: str) -> ParseResult:
    """Environment variables from a `/proc/PID/environ` copy or `KEY=VALUE` lines.

    A variable set twice keeps its first value (what `getenv` returns) and a warning.
    """
    if "\x00" in text:
        pairs, warnings = _environ_nul(text, source)
    else:
        pairs, warnings = _environ_lines(text, source)
    seen: dict[str, EnvVar] = {}
    for var in pairs:
        if var.name in seen:
            warnings.append(
                ParseWarning(
                    source=var.source,
                    message=f"{var.name} is set again; the first value "
                    f"(line {seen[var.name].source.line}) is the one getenv returns",
                )
            )
            continue
        seen[var.name] = var
    warnings.sort(key=lambda w: (w.source.line, w.message))
    return ParseResult(
        environment=Environment(variables=tuple(seen.values())), warnings=tuple(warnings)
    )


def _environ_nul(text: str, source: str) -> tuple[list[EnvVar], list[ParseWarning]]:
    pairs: list[EnvVar] = []
    warnings: list[ParseWarning] = []
    for number, entry in enumerate(text.split("\x00"), start=1):
        if not entry:
            continue
        name, sep, value = entry.partition("=")
        where = Location(path=source, line=number)
        if not sep or not _NAME_RE.match(name):
            warnings.append(
                ParseWarning(
                    source=where, message=f"entry {number} is not NAME=VALUE: {excerpt(entry)}"
                )
            )
            continue
        pairs.append(EnvVar(name=name, value=value, source=where))
    return pairs, warnings


def _environ_lines(text: str, source: str) -> tuple[list[EnvVar], list[ParseWarning]]:
    pairs: list[EnvVar] = []
    warnings: list[ParseWarning] = []
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _ASSIGN_RE.match(line)
        where = Location(path=source, line=number)
        if match is None or not _NAME_RE.match(match.group(1)):
            if pairs and raw and not raw[0].isspace() and "=" not in line.split(None, 1)[0]:
                # `env` prints a value with a newline over several lines.
                last = pairs[-1]
                pairs[-1] = EnvVar(name=last.name, value=f"{last.value}\n{raw}", source=last.source)
                warnings.append(
                    ParseWarning(
                        source=where,
                        message=f"not NAME=VALUE; kept as a continuation of {last.name}: "
                        + ("[redacted]" if is_secret_name(last.name) else excerpt(raw)),
                    )
                )
            else:
                warnings.append(
                    ParseWarning(source=where, message=f"not NAME=VALUE: {excerpt(raw)}")
                )
            continue
        value, problem = _unquote(match.group(2))
        if problem:
            warnings.append(ParseWarning(source=where, message=f"{match.group(1)}: {problem}"))
        pairs.append(EnvVar(name=match.group(1), value=value, source=where))
    return pairs, warnings


def _unquote(value: str) -> tuple[str, str]:
    """A value without the shell quotes `export -p` / `.env` files put around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            inner = re.sub(r'\\([\\"$`])', r"\1", inner)
        return inner, ""
    if value[:1] in "\"'" and not value.endswith(value[0]):
        return value, "unbalanced quote; value kept as written"
    return value, ""


# --------------------------------------------------------------------------- cmdline


def parse_cmdline(text: str, *, source: str) -> ParseResult:
    """Command lines: a `/proc/PID/cmdline` copy (one), or one shell-quoted command per line."""
    warnings: list[ParseWarning] = []
    cmdlines: list[CommandLine] = []
    if "\x00" in text:
        argv = tuple(part for part in text.rstrip("\x00").split("\x00"))
        if argv and any(argv):
            cmdlines.append(split_command(argv, source=Location(path=source, line=1)))
        else:
            warnings.append(ParseWarning(source=Location(path=source), message="empty cmdline"))
    else:
        for number, raw in enumerate(clean_lines(text), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = Location(path=source, line=number)
            try:
                argv = tuple(shlex.split(line))
            except ValueError as err:
                warnings.append(
                    ParseWarning(source=where, message=f"{err}; split on spaces instead")
                )
                argv = tuple(line.split())
            cmdlines.append(split_command(argv, source=where))
    if not cmdlines and not warnings:
        warnings.append(ParseWarning(source=Location(path=source), message="no command line"))
    return ParseResult(environment=Environment(cmdlines=tuple(cmdlines)), warnings=tuple(warnings))


def split_command(argv: tuple[str, ...], *, source: Location) -> CommandLine:
    """Split argv into program, options and positional arguments.

    `env A=1 python3 -u -m sglang.launch_server --tp 4 --mem-fraction-static=0.8 --trust-remote-code`
    gives program `sglang.launch_server`, flags `--tp=4`, `--mem-fraction-static=0.8`,
    `--trust-remote-code` (no value). An option takes the tokens after it up to the
    next option as its value (`--cuda-graph-bs 1 2 4` -> `"1 2 4"`); a negative
    number is a value, not an option.
    """
    index = 0
    if argv and argv[0].rsplit("/", 1)[-1] == "env":
        index = 1
        while index < len(argv) and _ASSIGN_RE.match(argv[index]) and "=" in argv[index]:
            index += 1
    if index >= len(argv):
        return CommandLine(argv=argv, program="", source=source)
    program = argv[index]
    index += 1
    if _PY_RE.match(program):
        program, index = _python_program(argv, index, program)
    flags: list[CommandFlag] = []
    positional: list[str] = []
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            positional.extend(argv[index:])
            break
        if not _is_option(token):
            positional.append(token)
            continue
        name, sep, value = token.partition("=")
        if sep and name.startswith("--"):
            flags.append(CommandFlag(name=name, value=value))
            continue
        values: list[str] = []
        while index < len(argv) and not _is_option(argv[index]) and argv[index] != "--":
            values.append(argv[index])
            index += 1
        flags.append(CommandFlag(name=token, value=" ".join(values) if values else None))
    return CommandLine(
        argv=argv,
        program=program,
        flags=tuple(flags),
        positional=tuple(positional),
        source=source,
    )


def _is_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER_RE.match(token)


def _python_program(argv: tuple[str, ...], index: int, interpreter: str) -> tuple[str, int]:
    """Skip the interpreter's own options; the module, script or `-c` is the program."""
    while index < len(argv):
        token = argv[index]
        if token == "-m" and index + 1 < len(argv):
            return argv[index + 1], index + 2
        if token.startswith("-m") and len(token) > 2:
            return token[2:], index + 1
        if token == "-c":
            return "-c", min(index + 2, len(argv))
        if token in _PY_ARG_OPTIONS:
            index += 2
            continue
        if token.startswith("-") and token != "-":
            index += 1
            continue
        return token, index + 1
    return interpreter, index


# --------------------------------------------------------------------------- packages


def parse_packages(text: str, *, source: str) -> ParseResult:
    """Installed packages from `pip freeze`, `pip list` or `pip list --format=json`."""
    if looks_like_pip_json(text[:SNIFF_CHARS]):
        return _pip_json(text, source)
    lines = clean_lines(text)
    content = [(n, line.strip()) for n, line in enumerate(lines, start=1) if line.strip()]
    if (
        len(content) > 1
        and _LIST_HEADER_RE.match(content[0][1])
        and _DASHES_RE.match(content[1][1])
    ):
        return _pip_columns(content[2:], source)
    return _pip_freeze(content, source)


def _pip_json(text: str, source: str) -> ParseResult:
    where = Location(path=source, line=1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return ParseResult(
            warnings=(
                ParseWarning(
                    source=Location(path=source, line=err.lineno),
                    message=f"not valid JSON ({err.msg}); no packages read",
                ),
            )
        )
    packages: list[Package] = []
    warnings: list[ParseWarning] = []
    for position, item in enumerate(data if isinstance(data, list) else [], start=1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            warnings.append(
                ParseWarning(source=where, message=f"item {position} has no package name")
            )
            continue
        version = item.get("version")
        packages.append(
            Package(
                name=normalise_package(item["name"]),
                version=str(version) if version is not None else "",
                origin=str(item.get("editable_project_location") or ""),
                source=where,
            )
        )
    if not isinstance(data, list):
        warnings.append(ParseWarning(source=where, message="not a JSON list of packages"))
    return ParseResult(environment=Environment(packages=tuple(packages)), warnings=tuple(warnings))


def _pip_columns(rows: list[tuple[int, str]], source: str) -> ParseResult:
    packages: list[Package] = []
    odd = Unrecognised(source, "a `pip list` row")
    for number, line in rows:
        parts = line.split()
        if len(parts) >= 2 and _VERSION_RE.match(parts[1]):
            packages.append(
                Package(
                    name=normalise_package(parts[0]),
                    version=parts[1],
                    origin=" ".join(parts[2:]),
                    source=Location(path=source, line=number),
                )
            )
        else:
            odd.add(number, line)
    odd.flush()
    return ParseResult(
        environment=Environment(packages=tuple(packages)), warnings=tuple(odd.warnings)
    )


def _pip_freeze(content: list[tuple[int, str]], source: str) -> ParseResult:
    packages: list[Package] = []
    odd = Unrecognised(source, "a `pip freeze` line")
    pending_note: tuple[str, str] | None = None
    for number, line in content:
        where = Location(path=source, line=number)
        note = _EDITABLE_NOTE_RE.match(line)
        if note:
            pending_note = (note.group(1), note.group(2))
            continue
        if line.startswith("#"):
            continue
        editable = _EDITABLE_RE.fullmatch(line)
        if editable:
            url = editable.group(1)
            egg = _EGG_RE.search(url)
            if egg:
                name, version = egg.group(1), ""
            elif pending_note:
                name, version = pending_note
            else:
                odd.warn(number, f"editable install without a package name: {excerpt(line)}")
                pending_note = None
                continue
            packages.append(
                Package(name=normalise_package(name), version=version, origin=url, source=where)
            )
            pending_note = None
            continue
        pending_note = None
        pin = _FREEZE_PIN_RE.fullmatch(line)
        if pin:
            packages.append(
                Package(name=normalise_package(pin.group(1)), version=pin.group(2), source=where)
            )
            continue
        url_match = _FREEZE_URL_RE.fullmatch(line)
        if url_match:
            url = url_match.group(2)
            wheel = _WHEEL_VERSION_RE.search(url)
            packages.append(
                Package(
                    name=normalise_package(url_match.group(1)),
                    version=wheel.group(2) if wheel else "",
                    origin=url,
                    source=where,
                )
            )
            continue
        odd.add(number, line)
    odd.flush()
    return ParseResult(
        environment=Environment(packages=tuple(packages)), warnings=tuple(odd.warnings)
    )


# --------------------------------------------------------------------------- check_env / collect_env


def parse_sglang_check_env(text: str, *, source: str) -> ParseResult:
    """`python3 -m sglang.check_env`: package versions, GPUs and `key: value` facts.

    The `NVIDIA Topology:` matrix and its legend are kept as one fact per block.
    """
    return _parse_key_values(text, source, what="`sglang.check_env` output", versions=True)


def parse_vllm_collect_env(text: str, *, source: str) -> ParseResult:
    """vLLM `collect_env.py`: `key : value` facts, `[pip3]` / `[conda]` packages,
    GPUs, the vLLM version and the environment variables it lists at the end."""
    return _parse_key_values(text, source, what="vLLM `collect_env` output", versions=False)


def _parse_key_values(text: str, source: str, *, what: str, versions: bool) -> ParseResult:
    """`key: value` facts and the packages among them.

    With `versions`, any `name: 1.2.3` line is a package (check_env's style); else
    only the `[pip3]` / `[conda]` lines and the PyTorch / vLLM version lines are.
    """
    facts: list[EnvFact] = []
    packages: list[Package] = []
    variables: list[EnvVar] = []
    gpus: list[Gpu] = []
    odd = Unrecognised(source, what)
    block: tuple[str, int, list[str]] | None = None

    def close() -> None:
        nonlocal block
        if block is not None:
            key, number, body = block
            while body and not body[-1].strip():
                body.pop()
            while body and not body[0].strip():
                body.pop(0)
            if body:
                facts.append(
                    EnvFact(
                        key=key, value="\n".join(body), source=Location(path=source, line=number)
                    )
                )
            block = None

    lines = clean_lines(text)
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = Location(path=source, line=number)
        if not line or line == "Collecting environment information...":
            if block is not None:
                block[2].append("")
            continue
        if _SECTION_RULE_RE.match(line):
            close()
            continue
        following = lines[number].strip() if number < len(lines) else ""
        if _SECTION_RULE_RE.match(following) and ":" not in line and "=" not in line:
            # A section title between two rules: `System Info`, `Environment Variables`.
            continue
        tagged = _PIP_TAG_RE.match(line)
        if tagged:
            close()
            package = _tagged_package(tagged.group(1), tagged.group(2), where)
            if package is not None:
                packages.append(package)
            continue
        env = _ENV_LINE_RE.match(line)
        if env and not raw[:1].isspace():
            close()
            variables.append(EnvVar(name=env.group(1), value=env.group(2), source=where))
            continue
        gpu = _GPU_LINE_RE.match(line)
        if gpu and not raw[:1].isspace():
            # `GPU 0,1,2,3: NVIDIA H100 80GB HBM3` names several GPUs at once.
            for index in (int(i) for i in re.findall(r"\d+", gpu.group(1))):
                gpus.append(Gpu(index=index, name=gpu.group(2), source=where))
            continue
        pair = _KV_RE.match(line) if not raw[:1].isspace() or block is None else None
        if pair and not ("\t" in raw and block is not None):
            key, value = pair.group(1).strip(), (pair.group(2) or "").strip()
            close()
            if not value:
                block = (key, number, [])
                continue
            package = _version_fact(key, value, where, generic=versions)
            if package is not None:
                packages.append(package)
            else:
                facts.append(EnvFact(key=key, value=value, source=where))
            continue
        if block is not None:
            block[2].append(raw.rstrip())
            continue
        odd.add(number, raw)
    close()
    odd.flush()
    # The first mention wins: `PyTorch version : 2.8.0+cu128` says more than `[pip3] torch==2.8.0`.
    unique: dict[str, Package] = {}
    for package in packages:
        unique.setdefault(package.name, package)
    environment = Environment(
        variables=tuple(variables),
        packages=tuple(unique.values()),
        facts=tuple(facts),
        gpus=tuple(gpus),
    )
    return ParseResult(environment=environment, warnings=tuple(odd.warnings))


def _tagged_package(tool: str, rest: str, where: Location) -> Package | None:
    """`[pip3] torch==2.7.0` or `[conda] torch 2.7.0 py3.12_cuda12.6 pytorch`."""
    if tool.startswith("pip"):
        pin = _FREEZE_PIN_RE.fullmatch(rest.strip())
        if pin:
            return Package(name=normalise_package(pin.group(1)), version=pin.group(2), source=where)
        return None
    parts = rest.split()
    if len(parts) >= 2 and _VERSION_RE.match(parts[1]):
        return Package(
            name=normalise_package(parts[0]), version=parts[1], origin="conda", source=where
        )
    return None


def _version_fact(key: str, value: str, where: Location, *, generic: bool) -> Package | None:
    """`sglang: 0.5.2` is a package (when `generic`); `CUDA available: True` is not."""
    lowered = key.lower()
    if lowered in _CHECK_ENV_FACTS:
        return None
    if lowered in ("vllm version", "pytorch version"):
        name = "vllm" if lowered.startswith("vllm") else "torch"
        return Package(name=name, version=value.split()[0], source=where)
    if (
        not generic
        or " " in key
        or not _VERSION_RE.match(value.split()[0] if value.split() else "")
    ):
        return None
    name = _CHECK_ENV_PACKAGES.get(lowered, lowered)
    return Package(name=normalise_package(name), version=value.split()[0], source=where)


# --------------------------------------------------------------------------- nvidia-smi


def parse_nvidia_smi(text: str, *, source: str) -> ParseResult:
    """GPUs (index, name, memory, utilisation), driver / CUDA versions and GPU processes."""
    lines = clean_lines(text)
    first = next((line.strip() for line in lines if line.strip()), "")
    if "," in first and "NVIDIA-SMI" not in first:
        return _smi_csv(lines, source)
    return _smi_table(lines, source)


def _smi_table(lines: list[str], source: str) -> ParseResult:
    facts: list[EnvFact] = []
    gpus: list[Gpu] = []
    odd = Unrecognised(source, "`nvidia-smi` output")
    pending: tuple[int, str, Location] | None = None
    in_processes = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = Location(path=source, line=number)
        if not line or _SMI_BORDER_RE.match(line):
            continue
        head = _SMI_HEAD_RE.search(line)
        if head:
            facts.append(EnvFact(key="NVIDIA-SMI version", value=head.group(1), source=where))
            facts.append(EnvFact(key="NVIDIA driver version", value=head.group(2), source=where))
            if head.group(3):
                facts.append(
                    EnvFact(key="CUDA version (driver)", value=head.group(3), source=where)
                )
            continue
        if _SMI_DATE_RE.match(line):
            facts.append(EnvFact(key="nvidia-smi time", value=line, source=where))
            continue
        if "Processes:" in line:
            in_processes = True
            continue
        if in_processes:
            proc = _SMI_PROC_RE.match(line)
            if proc:
                facts.append(
                    EnvFact(
                        key=f"GPU {proc.group(1)} process {proc.group(4)}",
                        value=f"{proc.group(6)} ({proc.group(7)} MiB)",
                        source=where,
                    )
                )
            elif "No running processes found" in line:
                facts.append(EnvFact(key="GPU processes", value="none", source=where))
            elif not _is_smi_header(line):
                odd.add(number, raw)
            continue
        gpu = _SMI_GPU_RE.match(line)
        if gpu:
            pending = (int(gpu.group(1)), gpu.group(2).strip(), where)
            continue
        usage = _SMI_USAGE_RE.match(line)
        if usage and pending is not None:
            index, name, at = pending
            gpus.append(
                Gpu(
                    index=index,
                    name=name,
                    memory_used_mib=int(usage.group(1)),
                    memory_total_mib=int(usage.group(2)),
                    utilization_pct=int(usage.group(3)),
                    source=at,
                )
            )
            pending = None
            continue
        if _is_smi_header(line) or (line.startswith("|") and pending is None):
            # Header rows and the third (MIG) row of each GPU carry nothing we use.
            continue
        odd.add(number, raw)
    if pending is not None:
        index, name, at = pending
        gpus.append(Gpu(index=index, name=name, source=at))
    odd.flush()
    return ParseResult(
        environment=Environment(facts=tuple(facts), gpus=tuple(gpus)), warnings=tuple(odd.warnings)
    )


def _is_smi_header(line: str) -> bool:
    return any(
        word in line
        for word in ("GPU  Name", "Fan  Temp", "MIG M.", "GPU   GI", "ID   ID", "Usage      |")
    )


def _smi_csv(lines: list[str], source: str) -> ParseResult:
    rows = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    header = [f.strip() for f in rows[0][1].split(",")]
    names: list[str] = []
    for field_text in header:
        match = _CSV_FIELD_RE.match(field_text)
        names.append(match.group(1) if match else field_text)
    gpus: list[Gpu] = []
    facts: list[EnvFact] = []
    odd = Unrecognised(source, "an `nvidia-smi --format=csv` row")
    for position, (number, line) in enumerate(rows[1:]):
        cells = [c.strip() for c in line.split(",")]
        where = Location(path=source, line=number)
        if len(cells) != len(names):
            odd.add(number, line)
            continue
        row = dict(zip(names, cells, strict=True))
        index = _int_prefix(row.get("index", "")) if "index" in row else position
        if index is None:
            odd.add(number, line)
            continue
        gpus.append(
            Gpu(
                index=index,
                name=row.get("name", ""),
                memory_used_mib=_int_prefix(row.get("memory.used", "")),
                memory_total_mib=_int_prefix(row.get("memory.total", "")),
                utilization_pct=_int_prefix(row.get("utilization.gpu", "")),
                source=where,
            )
        )
        if "driver_version" in row and not any(f.key == "NVIDIA driver version" for f in facts):
            facts.append(
                EnvFact(key="NVIDIA driver version", value=row["driver_version"], source=where)
            )
    odd.flush()
    return ParseResult(
        environment=Environment(gpus=tuple(gpus), facts=tuple(facts)), warnings=tuple(odd.warnings)
    )


def _int_prefix(text: str) -> int | None:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None


# --------------------------------------------------------------------------- sha256sum


def parse_source_hashes(text: str, *, source: str) -> ParseResult:
    """`sha256sum` output (`<64 hex>  path`, or ` *path` for binary mode) of deployed files."""
    hashes: list[FileHash] = []
    odd = Unrecognised(source, "a `sha256sum` line")
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SHA_LINE_RE.match(line)
        if match is None:
            odd.add(number, raw)
            continue
        path = match.group(2).strip()
        hashes.append(
            FileHash(
                path=path.removeprefix("./"),
                sha256=match.group(1).lower(),
                source=Location(path=source, line=number),
            )
        )
    odd.flush()
    return ParseResult(
        environment=Environment(file_hashes=tuple(hashes)), warnings=tuple(odd.warnings)
    )


def parse(kind: EvidenceKind, text: str, *, source: str) -> ParseResult:
    """Parse `text` with the environment parser for `kind` (an environment kind)."""
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ValueError(f"{kind} is not an environment evidence kind")
    return parser(text, source=source)


ENV_KINDS: tuple[EvidenceKind, ...] = (
    EvidenceKind.ENVIRON,
    EvidenceKind.CMDLINE,
    EvidenceKind.PACKAGES,
    EvidenceKind.SGLANG_CHECK_ENV,
    EvidenceKind.VLLM_COLLECT_ENV,
    EvidenceKind.NVIDIA_SMI,
    EvidenceKind.SOURCE_HASHES,
)

_PARSERS = {
    EvidenceKind.ENVIRON: parse_environ,
    EvidenceKind.CMDLINE: parse_cmdline,
    EvidenceKind.PACKAGES: parse_packages,
    EvidenceKind.SGLANG_CHECK_ENV: parse_sglang_check_env,
    EvidenceKind.VLLM_COLLECT_ENV: parse_vllm_collect_env,
    EvidenceKind.NVIDIA_SMI: parse_nvidia_smi,
    EvidenceKind.SOURCE_HASHES: parse_source_hashes,
}


def flag_map(cmdlines: Iterable[CommandLine]) -> dict[str, str]:
    """Options of the command lines as name -> value (`""` for a switch), program under `program`.

    A repeated option keeps its values joined by `, ` in the order given.
    """
    out: dict[str, str] = {}
    for cmd in cmdlines:
        if cmd.program:
            out.setdefault("program", cmd.program)
        for flag in cmd.flags:
            value = flag.value if flag.value is not None else ""
            if flag.name in out and out[flag.name] != value:
                out[flag.name] = f"{out[flag.name]}, {value}"
            else:
                out[flag.name] = value
    return out
