"""Hostile HTTP servers on 127.0.0.1 for the hostile suite and the collect benchmarks.

Each server answers every GET the way one broken or malicious endpoint would: a
`/metrics` or torch debug page that trickles, never ends, is huge, is a gzip bomb, or
holds escape sequences and secrets. Started and stopped by the caller::

    with HostileServer("trickle") as server:
        run(["report", "collect", "--metrics-url", server.url + "/metrics", ...])

The server counts what it sent (`sent`) and stops every connection when it is stopped:
no thread outlives the `with` block by more than one write.

Modes (see `MODES`):

* `trickle`: the headers (Content-Length 1 MB), then one byte of exposition text every
  `interval` seconds: each read gets data before any per-read timeout;
* `stall`: accepts the connection, reads the request, and sends nothing;
* `huge`: a `size`-byte exposition body (Content-Length), sent as fast as it is read;
* `endless`: chunked exposition text that never ends;
* `gzip-bomb`: `Content-Encoding: gzip`, a small body that inflates to `size` bytes;
* `debug-unclosed`: a torch debug page of `size` bytes of rank blocks whose `<pre>` never
  closes (a backtracking parser takes quadratic time on it);
* `debug-page`: a torch debug page per endpoint (`page` attribute: the rank blocks' text).
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
import zlib
from collections.abc import Callable
from types import TracebackType

MODES = (
    "trickle",
    "stall",
    "huge",
    "endless",
    "gzip-bomb",
    "debug-unclosed",
    "debug-page",
)
LINE = b"sglang:num_running_reqs 5\n"


def gzip_bomb(size: int) -> bytes:
    """A gzip member that inflates to `size` bytes of exposition text (about size / 1000)."""
    block = LINE * ((1 << 16) // len(LINE) + 1)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = []
    left = size
    while left > 0:
        piece = block[: min(left, len(block))]
        parts.append(compressor.compress(piece))
        left -= len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


class HostileServer:
    """One hostile endpoint on 127.0.0.1 (a random free port)."""

    def __init__(
        self,
        mode: str,
        *,
        size: int = 64 << 20,
        interval: float = 0.2,
        page: str = "",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self.size = size
        self.interval = interval
        self.page = page
        self.sent = 0
        self.requests: list[str] = []
        self.stopping = threading.Event()
        self._bomb = gzip_bomb(size) if mode == "gzip-bomb" else b""
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` of the server."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop accepting and end every connection at its next write."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # --- one connection -----------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            request = self._read_request(conn)
            if request is None:
                return
            self.requests.append(request)
            self._answer(conn, request)
        except OSError:
            return  # the client went away: what hostile servers expect

    def _read_request(self, conn: socket.socket) -> str | None:
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        return data.split(b"\r\n", 1)[0].decode("latin-1")

    def _send(self, conn: socket.socket, data: bytes) -> bool:
        if self.stopping.is_set():
            return False
        conn.sendall(data)
        self.sent += len(data)
        return True

    def _head(self, conn: socket.socket, *headers: str) -> bool:
        lines = ["HTTP/1.1 200 OK", "Connection: close", *headers, "", ""]
        return self._send(conn, "\r\n".join(lines).encode("latin-1"))

    def _answer(self, conn: socket.socket, request: str) -> None:
        handlers: dict[str, Callable[[socket.socket, str], None]] = {
            "trickle": self._trickle,
            "stall": self._stall,
            "huge": self._huge,
            "endless": self._endless,
            "gzip-bomb": self._gzip_bomb,
            "debug-unclosed": self._debug_unclosed,
            "debug-page": self._debug_page,
        }
        handlers[self.mode](conn, request)

    def _trickle(self, conn: socket.socket, request: str) -> None:
        if not self._head(conn, "Content-Type: text/plain", "Content-Length: 1000000"):
            return
        body = LINE * 40000
        for index in range(len(body)):
            if not self._send(conn, body[index : index + 1]):
                return
            if self.stopping.wait(self.interval):
                return

    def _stall(self, conn: socket.socket, request: str) -> None:
        self.stopping.wait(600)

    def _stream(self, conn: socket.socket, total: int | None, chunked: bool) -> None:
        block = LINE * ((1 << 20) // len(LINE))
        left = total
        while left is None or left > 0:
            piece = block if left is None else block[: min(left, len(block))]
            data = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece
            if not self._send(conn, data):
                return
            if left is not None:
                left -= len(piece)
        if chunked:
            self._send(conn, b"0\r\n\r\n")

    def _huge(self, conn: socket.socket, request: str) -> None:
        if self._head(conn, "Content-Type: text/plain", f"Content-Length: {self.size}"):
            self._stream(conn, self.size, chunked=False)

    def _endless(self, conn: socket.socket, request: str) -> None:
        if self._head(conn, "Content-Type: text/plain", "Transfer-Encoding: chunked"):
            self._stream(conn, None, chunked=True)

    def _gzip_bomb(self, conn: socket.socket, request: str) -> None:
        body = self._bomb
        if self._head(
            conn,
            "Content-Type: text/plain",
            "Content-Encoding: gzip",
            f"Content-Length: {len(body)}",
        ):
            self._send(conn, body)

    def _debug_unclosed(self, conn: socket.socket, request: str) -> None:
        block = b"<h2>Rank 0: http://127.0.0.1:1/handler/stacks?</h2>\n<pre>x\n"
        body = block * (self.size // len(block) + 1)
        if self._head(conn, "Content-Type: text/html", f"Content-Length: {len(body)}"):
            self._send(conn, body)

    def _debug_page(self, conn: socket.socket, request: str) -> None:
        body = self.page.encode("utf-8")
        if self._head(
            conn, "Content-Type: text/html; charset=utf-8", f"Content-Length: {len(body)}"
        ):
            self._send(conn, body)


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll `predicate` until it holds or `timeout` seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


__all__ = ["MODES", "HostileServer", "gzip_bomb", "wait_for"]
