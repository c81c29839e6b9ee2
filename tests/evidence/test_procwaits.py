"""The per-round `/proc` files of `report collect` (`proc-threads`, `proc-fds`,
`proc-sockets`, `proc-family`): sniffing and parsing.

The texts below are as `reporter.collect.procread` wrote them for real processes on this
machine (a parent blocked in `Popen.wait` on its child, which writes to a full pipe);
the malformed ones are edited by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.evidence.kinds import procfamily, procfds, procsockets, procthreads
from reporter.evidence.sniff import parse, sniff
from reporter.model import EvidenceKind, FdKind

AT = datetime(2026, 12, 7, 12, 40, 52, 774519, tzinfo=UTC)

THREADS = (
    "# report-proc: threads pid=21225 snapshot=2 at=2026-12-07T12:40:52.774519Z\n"
    "# tid\tstate\twchan\tutime\tstime\tcomm\n"
    "21225\tS\tpipe_write\t42\t2\tpython\n"
    "21230\tR\t\t7\t0\tworker\\tone\n"
)
FDS = (
    "# report-proc: fds pid=21225 snapshot=0 at=2026-12-07T12:40:52.774519Z\n"
    "# fd\tmode\ttarget\n"
    "0\tr\tpipe:[33671]\n"
    "1\tw\tpipe:[33798]\n"
    "2\t\t/tmp/job/stderr\n"
    "3\t\tsocket:[33672]\n"
    "7\t\tanon_inode:[eventpoll]\n"
)
SOCKETS = (
    "# report-proc: sockets pid=21225 snapshot=0 at=2026-12-07T12:40:52.774519Z\n"
    "# /proc/21225/net/tcp\n"
    "   1: 0100007F:B87B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
    "        0 33672 1 000000009f33d282 100 0 0 10 0\n"
    "   2: 0100007F:7531 0100007F:A2F4 01 00000010:00000020 00:00000000 00000000  1000"
    "        0 33680 1 000000009f33d282 100 0 0 10 0\n"
    "# /proc/21225/net/tcp6\n"
    "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A"
    " 00000000:00000000 00:00000000 00000000     0        0 33690 1 0 100 0 0 10 0\n"
    "# /proc/21225/net/unix\n"
    "00000000cbb3147f: 00000002 00000000 00000000 0001 01 33675 @abc\n"
    "00000000cbb3148f: 00000002 00000000 00010000 0001 01 33676 /run/app.sock\n"
    "00000000cbb3149f: 00000003 00000000 00000000 0001 03 33677\n"
)
FAMILY = (
    "# report-proc: family pid=21225 snapshot=1 at=2026-12-07T12:40:52.774519Z\n"
    "Pid:\t21225\n"
    "PPid:\t20236\n"
    "State:\tS\n"
    "Comm:\tpython\n"
    "Uid:\t1000\n"
    "Threads:\t2\n"
    "StartTicks:\t92327\n"
    "Started:\t2026-12-07T12:40:51.270000Z\n"
    "Child:\t21226\tZ\tpython3\n"
    "Child:\t21227\tS\tsleep\n"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (THREADS, EvidenceKind.PROC_THREADS),
        (FDS, EvidenceKind.PROC_FDS),
        (SOCKETS, EvidenceKind.PROC_SOCKETS),
        (FAMILY, EvidenceKind.PROC_FAMILY),
    ],
)
def test_each_kind_is_sniffed_from_its_header(text: str, kind: EvidenceKind) -> None:
    assert sniff(text) is kind
    # Without the header it is not ours (a bare table could be anything).
    assert sniff(text.split("\n", 1)[1]) is not kind


@pytest.mark.parametrize(
    "body",
    [
        # Found by the property test below: a body quoting another kind's first line
        # won the markers' race against the header.
        "Fatal Python error: ",
        'Thread 0x7F0A (idle): "MainThread"\n',
        "Process 4711: python3 -m sglang.launch_server\nPython v3.11.7\n",
        "Current thread 0x00007f0a (most recent call first):\n",
    ],
)
def test_the_header_names_the_kind_whatever_the_body_quotes(body: str) -> None:
    for text, kind in ((THREADS, EvidenceKind.PROC_THREADS), (FAMILY, EvidenceKind.PROC_FAMILY)):
        head = text.split("\n", 1)[0] + "\n"
        assert sniff(head + body) is kind


def test_threads() -> None:
    result = procthreads.parse(THREADS, source="proc/pid21225-s2.threads")
    main, worker = result.thread_states
    assert (main.pid, main.tid, main.state, main.wchan) == (21225, 21225, "S", "pipe_write")
    assert (main.utime, main.stime, main.snapshot, main.captured_at) == (42, 2, 2, AT)
    assert main.source.line == 3
    assert (worker.state, worker.wchan, worker.comm) == ("R", "", "worker\tone")
    assert not result.warnings


def test_fds_kinds_inodes_and_modes() -> None:
    entries = procfds.parse(FDS, source="fds").fd_entries
    assert [(e.fd, e.kind, e.inode, e.mode) for e in entries] == [
        (0, FdKind.PIPE, 33671, "r"),
        (1, FdKind.PIPE, 33798, "w"),
        (2, FdKind.FILE, None, ""),
        (3, FdKind.SOCKET, 33672, ""),
        (7, FdKind.ANON, None, ""),
    ]
    assert entries[2].target == "/tmp/job/stderr"


def test_sockets_decode_addresses_and_states() -> None:
    rows = procsockets.parse(SOCKETS, source="sockets").socket_rows
    got = [(r.protocol, r.inode, r.local, r.remote, r.state) for r in rows]
    assert got == [
        ("tcp", 33672, "127.0.0.1:47227", "0.0.0.0:0", "LISTEN"),
        ("tcp", 33680, "127.0.0.1:30001", "127.0.0.1:41716", "ESTABLISHED"),
        ("tcp6", 33690, "[::1]:8080", "[::]:0", "LISTEN"),
        ("unix", 33675, "@abc", "", "UNCONNECTED"),
        ("unix", 33676, "/run/app.sock", "", "LISTEN"),
        ("unix", 33677, "", "", "CONNECTED"),
    ]
    assert (rows[1].tx_queue, rows[1].rx_queue, rows[1].uid) == (16, 32, 1000)


def test_family_with_a_zombie_child() -> None:
    (rel,) = procfamily.parse(FAMILY, source="family").process_relations
    assert (rel.pid, rel.ppid, rel.state, rel.uid, rel.threads) == (21225, 20236, "S", 1000, 2)
    assert rel.start_ticks == 92327
    assert rel.started_at == datetime(2026, 12, 7, 12, 40, 51, 270000, tzinfo=UTC)
    assert [(c.pid, c.state, c.comm) for c in rel.children] == [
        (21226, "Z", "python3"),
        (21227, "S", "sleep"),
    ]
    assert rel.snapshot == 1


def test_bad_rows_are_warnings_not_errors() -> None:
    broken = THREADS + "garbage line\n# truncated: deadline passed; 3 of 9 threads not read\n"
    result = parse(EvidenceKind.PROC_THREADS, broken, source="t")
    assert len(result.thread_states) == 2
    messages = [w.message for w in result.warnings]
    assert any("not a thread row" in m for m in messages)
    assert any("deadline passed" in m for m in messages)
    headless = procfds.parse(FDS.split("\n", 1)[1], source="f")
    assert not headless.fd_entries and "header" in headless.warnings[0].message
    sockets = procsockets.parse(SOCKETS.replace("0100007F:7531", "XYZ:7531"), source="s")
    assert len(sockets.socket_rows) == 5
    assert "not a socket row" in sockets.warnings[0].message


_HEADS = [
    "# report-proc: threads pid=1 snapshot=0 at=2026-12-07T12:00:00Z\n",
    "# report-proc: fds pid=1\n",
    "# report-proc: sockets pid=1 snapshot=3\n# /proc/1/net/tcp\n",
    "# report-proc: sockets pid=1 snapshot=3\n# /proc/1/net/unix\n",
    "# report-proc: family pid=1 snapshot=0 at=not-a-time\n",
]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_HEADS), st.text(alphabet=st.characters(), max_size=400))
def test_any_body_after_a_header_parses_without_raising(head: str, body: str) -> None:
    text = head + body
    kind = sniff(text)
    assert kind in {
        EvidenceKind.PROC_THREADS,
        EvidenceKind.PROC_FDS,
        EvidenceKind.PROC_SOCKETS,
        EvidenceKind.PROC_FAMILY,
    }
    parse(kind, text, source="fuzz")
