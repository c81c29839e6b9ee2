"""torch debug server client: real pages parsed, fetched over a local server, dump files found."""

from __future__ import annotations

import http.server
import pickle
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reporter.collect import frfiles, torchdebug
from reporter.collect.httpread import Limits
from reporter.model import EvidenceKind

PAGES = Path(__file__).resolve().parents[2] / "fixtures" / "torch_debug"


def test_a_real_fr_trace_json_page_has_one_json_dump_per_rank() -> None:
    answers = torchdebug.parse_page((PAGES / "fr_trace_json.html").read_text(encoding="utf-8"))
    assert [a.rank for a in answers] == [0, 1, 2, 3]
    assert all(a.ok and a.status == 200 for a in answers)
    assert all(a.address.endswith("/handler/fr_trace_json?") for a in answers)
    assert all(a.text.lstrip().startswith("{") and '"entries"' in a.text for a in answers)


def test_failed_ranks_keep_their_status_and_text() -> None:
    page = (PAGES / "fr_trace_nccl_json.html").read_text(encoding="utf-8")
    answers = torchdebug.parse_page(page)
    assert len(answers) == 4
    assert not any(a.ok for a in answers)
    assert {a.status for a in answers} == {404}
    assert "dump_nccl_trace_json" in answers[0].text


def test_stack_pages_keep_raw_text_unescaped() -> None:
    answers = torchdebug.parse_page((PAGES / "stacks.html").read_text(encoding="utf-8"))
    assert "(most recent call first)" in answers[0].text
    assert "<module>" in answers[0].text or "<no Python frame>" in answers[0].text


class _Pages(http.server.BaseHTTPRequestHandler):
    delay = 0.0

    def do_GET(self) -> None:
        name = self.path.strip("/").split("?")[0]
        if name == "pyspy_dump":
            time.sleep(_Pages.delay)
        path = PAGES / f"{name}.html"
        if not path.is_file():
            self.send_error(404, f"Handler not found: /{name}")
            return
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        raise AssertionError("the client must only GET")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetch_all_writes_per_rank_files_and_lists_what_it_could_not_get(server: str) -> None:
    with httpx.Client() as client:
        result = torchdebug.fetch_all(client, server, limits=Limits(10, 1 << 20))

    paths = {f.path: f for f in result.files}
    assert {f"torch-debug/fr_trace/rank{r}.json" for r in range(4)} <= set(paths)
    assert {f"torch-debug/pyspy/rank{r}.txt" for r in range(4)} <= set(paths)
    # One stack form per rank: py-spy answered, so /stacks is not kept.
    assert not any(p.startswith("torch-debug/stacks/") for p in paths)
    assert paths["torch-debug/fr_trace/rank2.json"].kind is EvidenceKind.FLIGHT_RECORDER
    assert paths["torch-debug/fr_trace/rank2.json"].rank == 2
    reasons = {f.what: f.reason for f in result.failures}
    assert any("fr_trace_nccl_json rank 0" in w for w in reasons)
    assert any(w.endswith("/stacks ranks [0-3]") for w in reasons)


def test_a_slow_endpoint_is_a_bounded_failure(server: str) -> None:
    _Pages.delay = 3.0
    try:
        with httpx.Client() as client:
            began = time.monotonic()
            result = torchdebug.fetch_all(client, server, limits=Limits(0.5, 1 << 20))
            took = time.monotonic() - began
    finally:
        _Pages.delay = 0.0
    assert any(f.reason.startswith("no complete answer within 0.5 s") for f in result.failures)
    # py-spy failed everywhere, so the faulthandler stacks are kept instead.
    assert any(f.path.startswith("torch-debug/stacks/") for f in result.files)
    assert took < 10


def test_an_unreachable_server_is_failures_not_an_exception() -> None:
    with httpx.Client() as client:
        result = torchdebug.fetch_all(client, "http://127.0.0.1:9", limits=Limits(1, 1 << 20))
    assert result.files == ()
    assert len(result.failures) == len(torchdebug.ENDPOINTS)


def test_dump_files_are_found_by_prefix_and_in_a_folder(tmp_path: Path) -> None:
    dump = pickle.dumps({"version": "2.10", "entries": [], "pg_config": {}})
    (tmp_path / "nccl_trace_rank_0").write_bytes(dump)
    (tmp_path / "nccl_trace_rank_1").write_bytes(dump)
    (tmp_path / "nccl_trace_rank_x").write_bytes(dump)
    (tmp_path / "notes.txt").write_text("not a dump\n", encoding="utf-8")

    by_prefix = frfiles.find_prefixed(str(tmp_path / "nccl_trace_rank_"))
    assert [(d.rank, d.source.name) for d in by_prefix] == [
        (0, "nccl_trace_rank_0"),
        (1, "nccl_trace_rank_1"),
    ]
    in_dir = frfiles.find_in_dir(tmp_path)
    assert sorted(d.source.name for d in in_dir) == [
        "nccl_trace_rank_0",
        "nccl_trace_rank_1",
        "nccl_trace_rank_x",
    ]
    assert all(d.path.startswith(f"fr/{tmp_path.name}/") for d in in_dir)


def test_dump_prefixes_come_from_the_targets_environments() -> None:
    environs = {
        7: "PATH=/bin\x00TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/var/fr/trace_\x00",
        8: "TORCH_FR_DUMP_TEMP_FILE=/scratch/fr_",
    }
    assert frfiles.dump_prefixes(environs) == (
        "/scratch/fr_",
        frfiles.DEFAULT_DUMP_PREFIX,
        "/var/fr/trace_",
    )
