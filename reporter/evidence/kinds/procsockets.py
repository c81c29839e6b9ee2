"""Socket table rows of one process's sockets (kind `proc-sockets`) into `SocketRow` records.

`report collect` writes one such file per target and round (`proc/pid4711-s0.sockets`):
the rows of `/proc/PID/net/tcp`, `tcp6` and `unix` (the process's own network namespace)
whose inode is one of its `socket:[N]` fds, verbatim, each table after a line naming it::

    # report-proc: sockets pid=4711 snapshot=0 at=2026-12-07T12:40:00.123456Z
    # /proc/4711/net/tcp
       0: 0100007F:7531 0100007F:A2F4 01 00000000:00000000 00:00000000 00000000     0        0 67890 1 ...
    # /proc/4711/net/unix
    0000000000000000: 00000003 00000000 00000000 0001 03 67891 /run/app.sock

TCP addresses are the kernel's hex (IPv4 as one little-endian word, IPv6 as four) and are
decoded to `127.0.0.1:30001`; the state byte becomes its word (`01` ESTABLISHED, `0A`
LISTEN). A unix row gives its type's state (`03` CONNECTED) and, when bound, its path.
The kernel's own column-header lines are skipped.
"""

from __future__ import annotations

import ipaddress

from reporter.evidence import prochead
from reporter.evidence._text import excerpt, warning_at
from reporter.evidence.kinds.interface import round_read_entry
from reporter.model import EvidenceKind, Location, ParseResult, SocketRow

SNIFF = prochead.sniffer("sockets")
TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
    "0C": "NEW_SYN_RECV",
}
UNIX_STATES = {"01": "UNCONNECTED", "02": "CONNECTING", "03": "CONNECTED", "04": "DISCONNECTING"}
# `Flags` bit of a unix socket that accepts connections (__SO_ACCEPTCON).
_ACCEPTCON = 0x10000
_PROTOCOLS = ("tcp", "tcp6", "unix")


def looks_like(head: str) -> bool:
    """True when `head` starts with the `sockets` header."""
    return SNIFF.match(head) is not None


def tcp_address(hex_address: str) -> str:
    """`0100007F:7531` -> `127.0.0.1:30001`; IPv6 in brackets. ValueError if not one."""
    addr, _, port_hex = hex_address.partition(":")
    port = int(port_hex, 16)
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        return f"{ipaddress.IPv4Address(raw[::-1])}:{port}"
    if len(raw) == 16:
        # Four 32-bit words, each in host (little-endian) order.
        words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
        v6 = ipaddress.IPv6Address(words)
        shown = str(v6.ipv4_mapped) if v6.ipv4_mapped is not None else str(v6)
        return f"[{shown}]:{port}"
    raise ValueError(f"address of {len(raw)} bytes")


def parse(text: str, *, source: str) -> ParseResult:
    """Every socket row of `text`; never raises on malformed input."""
    head, lines, warnings = prochead.lines(text, source=source, kind="sockets")
    if head is None:
        return ParseResult(warnings=tuple(warnings))
    rows: list[SocketRow] = []
    protocol = ""
    for number, line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            name = stripped.rsplit("/", 1)[-1]
            protocol = name if name in _PROTOCOLS else ""
            continue
        if stripped.startswith(("sl ", "Num ")):
            continue  # the kernel's column headers
        try:
            row = _row(protocol, stripped, head.pid)
        except (ValueError, IndexError):
            row = None
        if row is None:
            warnings.append(warning_at(source, number, f"not a socket row: {excerpt(line)}"))
            continue
        rows.append(
            SocketRow(
                pid=head.pid,
                inode=row[0],
                protocol=protocol,
                local=row[1],
                remote=row[2],
                state=row[3],
                tx_queue=row[4],
                rx_queue=row[5],
                uid=row[6],
                captured_at=head.at,
                snapshot=head.snapshot,
                source=Location(path=source, line=number),
            )
        )
    return ParseResult(socket_rows=tuple(rows), warnings=tuple(warnings))


_Row = tuple[int, str, str, str, int | None, int | None, int | None]


def _row(protocol: str, line: str, pid: int) -> _Row | None:
    fields = line.split()
    if protocol in ("tcp", "tcp6"):
        if len(fields) < 10:
            return None
        tx, _, rx = fields[4].partition(":")
        return (
            int(fields[9]),
            tcp_address(fields[1]),
            tcp_address(fields[2]),
            TCP_STATES.get(fields[3].upper(), fields[3]),
            int(tx, 16),
            int(rx, 16),
            int(fields[7]),
        )
    if protocol == "unix":
        if len(fields) < 7:
            return None
        flags = int(fields[3], 16)
        state = "LISTEN" if flags & _ACCEPTCON else UNIX_STATES.get(fields[5], fields[5])
        path = line.split(None, 7)[7] if len(fields) > 7 else ""
        return (int(fields[6]), prochead.unescape(path), "", state, None, None, None)
    return None


ENTRY = round_read_entry(
    EvidenceKind.PROC_SOCKETS,
    name="sockets",
    says="socket rows (/proc/{pid}/net/tcp, tcp6, unix)",
    field="socket_rows",
    parse=parse,
    looks_like=looks_like,
)
