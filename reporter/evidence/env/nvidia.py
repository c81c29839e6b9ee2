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
_SMI_USAGE_RE = re.compile(r"\|.*?\|\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\d+)%")
_BUS_ID_RE = re.compile(r"[0-9A-Fa-f:.]{1,32}\Z")
_MIB_RE = re.compile(r"(\d{1,12})MiB\Z")
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


def _gpu_row(line: str) -> tuple[int, str] | None:
    """(index, name) of a GPU row: `| 0  NVIDIA H100 80GB HBM3   On  |   00000000:18:00.0 Off |`.

    Cells split at `|`, words at whitespace (a lazy row pattern backtracked on long runs
    of spaces).
    """
    cells = line.split("|")
    if len(cells) < 4 or cells[0].strip():
        return None
    first, second = cells[1].split(), cells[2].split()
    if len(first) < 3 or not first[0].isdigit() or first[-1] not in ("On", "Off"):
        return None
    if len(second) != 2 or second[1] not in ("On", "Off") or not _BUS_ID_RE.match(second[0]):
        return None
    if not cells[1][-1:].isspace() or not cells[2][-1:].isspace():
        return None
    return int(first[0]), " ".join(first[1:-1])


def _process_row(line: str) -> tuple[str, str, str, str] | None:
    """(GPU, PID, process name, MiB) of a row of the process table:
    `|    0   N/A  N/A     12345      C   python3     1234MiB |`."""
    if not (line.startswith("|") and line.endswith("|")) or line.count("|") != 2:
        return None
    words = line[1:-1].split()
    if len(words) < 7 or not words[0].isdigit() or not words[3].isdigit():
        return None
    mib = _MIB_RE.match(words[-1])
    if mib is None:
        return None
    return words[0], words[3], " ".join(words[5:-1]), mib.group(1)


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
            proc = _process_row(line)
            if proc:
                gpu_index, pid, name, mib = proc
                facts.append(
                    EnvFact(
                        key=f"GPU {gpu_index} process {pid}",
                        value=f"{name} ({mib} MiB)",
                        source=where,
                    )
                )
            elif "No running processes found" in line:
                facts.append(EnvFact(key="GPU processes", value="none", source=where))
            elif not _is_smi_header(line):
                odd.add(number, raw)
            continue
        gpu = _gpu_row(line)
        if gpu:
            pending = (gpu[0], gpu[1], where)
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
