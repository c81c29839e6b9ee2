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

Modules: `process` (environ, cmdline), `packages` (pip), `reports` (check_env,
collect_env), `nvidia` (nvidia-smi), `hashes` (sha256sum), `sniffing`, and `grammar`
for the line shapes they share.

`sniff(text)` tells these kinds apart from the first 64 KiB: `sniff_distinctive` (markers
no other evidence has) then `sniff_generic` (the shape of the lines); `reporter.evidence.sniff`
runs the two halves before and after the metric and log sniffers.
"""

from __future__ import annotations

from reporter.evidence.env.grammar import SNIFF_CHARS, looks_like_pip_json, normalise_package
from reporter.evidence.env.hashes import parse_source_hashes
from reporter.evidence.env.nvidia import parse_nvidia_smi
from reporter.evidence.env.packages import parse_packages
from reporter.evidence.env.process import flag_map, parse_cmdline, parse_environ, split_command
from reporter.evidence.env.reports import parse_sglang_check_env, parse_vllm_collect_env
from reporter.evidence.env.sniffing import sniff, sniff_distinctive, sniff_generic
from reporter.model import EvidenceKind, ParseResult

__all__ = [
    "ENV_KINDS",
    "SNIFF_CHARS",
    "flag_map",
    "looks_like_pip_json",
    "normalise_package",
    "parse",
    "parse_cmdline",
    "parse_environ",
    "parse_nvidia_smi",
    "parse_packages",
    "parse_sglang_check_env",
    "parse_source_hashes",
    "parse_vllm_collect_env",
    "sniff",
    "sniff_distinctive",
    "sniff_generic",
    "split_command",
]


# The environment kinds and their parsers, in the order the report lists them.
_PARSERS = {
    EvidenceKind.ENVIRON: parse_environ,
    EvidenceKind.CMDLINE: parse_cmdline,
    EvidenceKind.PACKAGES: parse_packages,
    EvidenceKind.SGLANG_CHECK_ENV: parse_sglang_check_env,
    EvidenceKind.VLLM_COLLECT_ENV: parse_vllm_collect_env,
    EvidenceKind.NVIDIA_SMI: parse_nvidia_smi,
    EvidenceKind.SOURCE_HASHES: parse_source_hashes,
}
ENV_KINDS: tuple[EvidenceKind, ...] = tuple(_PARSERS)


def parse(kind: EvidenceKind, text: str, *, source: str) -> ParseResult:
    """Parse `text` with the environment parser for `kind` (an environment kind)."""
    parser = _PARSERS.get(kind)
    if parser is None:
        raise ValueError(f"{kind} is not an environment evidence kind")
    return parser(text, source=source)
