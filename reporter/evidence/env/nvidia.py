"""`nvidia-smi`: the default table, or `--query-gpu=... --format=csv`."""

from __future__ import annotations

import re

from reporter.evidence._text import Unrecognised, clean_lines
from reporter.model import EnvFact, Environment, Gpu, Location, ParseResult

# The longest line of nvidia-smi's table worth matching (its rows are about 90 characters).
MAX_SMI_LINE = 400
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
        if len(line) > MAX_SMI_LINE:
            # No row of nvidia-smi's table is this long; the row patterns below backtrack
            # on a long line of spaces, so such a line is only noted.
            odd.add(number, raw[:MAX_SMI_LINE])
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
