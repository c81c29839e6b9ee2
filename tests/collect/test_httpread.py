"""One bounded HTTP read (issue 21): a deadline for the whole request, a cap after decoding,
Ctrl-C honoured at once; against hostile servers on 127.0.0.1 (tests/hostile/servers.py)."""

from __future__ import annotations

import gzip
import http.server
import threading
import time

import httpx
from hostile.servers import LINE, HostileServer

from reporter.collect import scrape
from reporter.collect.httpread import Limits, fetch


def _get(url: str, limits: Limits, stop: threading.Event | None = None) -> object:
    with scrape.make_client() as client:
        return fetch(client, client.build_request("GET", url), limits=limits, stop=stop)


def test_a_trickling_answer_is_cut_at_the_deadline() -> None:
    with HostileServer("trickle", interval=0.05) as server:
        began = time.monotonic()
        answer = _get(server.url, Limits(1.0, 1 << 20))
        took = time.monotonic() - began
    assert answer.error.startswith("no complete answer within 1 s")  # type: ignore[attr-defined]
    assert server.sent > 0  # bytes kept coming: a per-read timeout never fired
    assert took < 10


def test_a_silent_server_is_cut_at_the_deadline() -> None:
    with HostileServer("stall") as server:
        answer = _get(server.url, Limits(0.5, 1 << 20))
    assert answer.error.startswith("no complete answer within 0.5 s")  # type: ignore[attr-defined]


def test_huge_endless_and_gzip_bomb_answers_stop_at_the_cap() -> None:
    for mode in ("huge", "endless", "gzip-bomb"):
        with HostileServer(mode, size=64 << 20) as server:
            answer = _get(server.url + "/metrics", Limits(30.0, 1 << 20))
        assert "larger than the 1.0 MiB cap" in answer.error, mode  # type: ignore[attr-defined]
        # The server was not read to its end (a bomb's inflated size counts, not its own).
        assert server.sent < 48 << 20, mode


def test_a_stop_ends_the_read_at_once() -> None:
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    with HostileServer("trickle", interval=0.05) as server:
        began = time.monotonic()
        answer = _get(server.url, Limits(60.0, 1 << 20), stop)
        took = time.monotonic() - began
    assert answer.error.startswith("interrupted")  # type: ignore[attr-defined]
    assert took < 5


def test_a_gzip_answer_is_decoded() -> None:
    body = LINE * 1000

    class Gzipped(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = gzip.compress(body)
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gzipped)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        answer = _get(f"http://127.0.0.1:{server.server_address[1]}/", Limits(5, 1 << 20))
    finally:
        server.shutdown()
        server.server_close()
    assert answer.error == "" and answer.status == 200  # type: ignore[attr-defined]
    assert answer.body == body  # type: ignore[attr-defined]


def test_an_unknown_encoding_is_an_error_not_garbage() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, stream=httpx.ByteStream(b"x"), headers={"content-encoding": "br"}
        )

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        answer = fetch(client, client.build_request("GET", "http://h/"), limits=Limits(5, 1 << 20))
    assert "unsupported Content-Encoding" in answer.error
