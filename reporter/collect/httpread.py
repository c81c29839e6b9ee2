"""One bounded HTTP read: a total deadline, a size cap after decoding, and a stop switch.

Every request `report collect` sends (a `/metrics` scrape, a Prometheus `query_range`,
a torch debug page) goes through `fetch`. httpx's timeouts bound each socket read, so
an endpoint that trickles a byte a second, in its headers or its body, would hold a
read forever; here one deadline covers the whole request (connect, headers, body), and
a watchdog thread shuts the connection's socket down when the deadline passes or the
stop switch is set (Ctrl-C), so the read returns at once.

The body is read as it arrives and decoded here (gzip and deflate, with zlib's
`max_length`), so the cap counts the bytes after decoding: a small gzip bomb stops at
the cap as a huge plain answer does, and memory stays near the cap. An answer over the
cap is not kept: the error says the cap and how to raise it. Example::

    answer = fetch(client, client.build_request("GET", url), limits=Limits(10.0, 64 << 20))
    answer.status, answer.body, answer.error  # error: "" or one line saying why not

Connections are not kept alive between requests (see `make_client` in `scrape`): each
request's socket is its own, so the watchdog never cuts another request's connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from reporter.core.fileio import human_size

# How often the watchdog looks at the stop switch.
_POLL_S = 0.05
# Decoded bytes asked of zlib per step (bounds one step's memory).
_STEP = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one request: `deadline` seconds in all, `max_bytes` of decoded body."""

    deadline: float
    max_bytes: int

    def describe(self) -> str:
        """`10 s, 64.0 MiB` (for the manifest and errors)."""
        return f"{self.deadline:g} s, {human_size(self.max_bytes)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What came back: the status and headers, the decoded body, or why there is none."""

    status: int = 0
    headers: httpx.Headers = field(default_factory=httpx.Headers)
    body: bytes = b""
    error: str = ""
    """One line: the deadline passed, the cap was reached, interrupted, or a network error."""
    seconds: float = 0.0

    @property
    def text(self) -> str:
        """The body as text (the charset the server named, else UTF-8; bad bytes replaced)."""
        charset = httpx.Response(200, headers=self.headers).charset_encoding or "utf-8"
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


class _Watchdog:
    """Shuts the request's socket down at the deadline or when `stop` is set."""

    def __init__(self, deadline: float, stop: threading.Event | None) -> None:
        self.ends = time.monotonic() + deadline
        self.stop = stop
        self.done = threading.Event()
        self.fired = ""
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._watch, name="http-deadline", daemon=True)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep the socket of each new connection."""
        if event.endswith("connect_tcp.complete") or event.endswith("connect_unix_socket.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self.lock:
                    self.sockets.append(sock)
                    if self.fired:
                        _cut(sock)

    def _watch(self) -> None:
        while not self.done.is_set():
            if self.stop is not None and self.stop.is_set():
                self._fire("interrupted")
                return
            left = self.ends - time.monotonic()
            if left <= 0:
                self._fire("deadline")
                return
            self.done.wait(min(left, _POLL_S))

    def _fire(self, why: str) -> None:
        with self.lock:
            self.fired = why
            for sock in self.sockets:
                _cut(sock)

    def expired(self) -> str:
        """ "deadline", "interrupted", or "" while neither happened."""
        if not self.fired:
            if self.stop is not None and self.stop.is_set():
                return "interrupted"
            if time.monotonic() >= self.ends:
                return "deadline"
        return self.fired


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


class _Decoder:
    """Content-Encoding undone step by step, never more than the cap at once."""

    def __init__(self, encoding: str) -> None:
        names = [e.strip().lower() for e in encoding.split(",") if e.strip()]
        names = [n for n in names if n != "identity"]
        if len(names) > 1 or (names and names[0] not in ("gzip", "x-gzip", "deflate")):
            raise ValueError(f"unsupported Content-Encoding {encoding!r}")
        self.kind = names[0] if names else ""
        self.zlib: Any = None
        if self.kind in ("gzip", "x-gzip"):
            self.zlib = zlib.decompressobj(31)
        elif self.kind == "deflate":
            self.zlib = zlib.decompressobj(15)

    def feed(self, data: bytes, room: int, sink: Callable[[bytes], None]) -> bool:
        """Decode `data` into `sink`; False once more than `room` bytes would come out."""
        if self.zlib is None:
            if len(data) > room:
                return False
            sink(data)
            return True
        pending = data
        while pending or self.zlib.unconsumed_tail:
            chunk = self.zlib.decompress(pending or self.zlib.unconsumed_tail, min(room + 1, _STEP))
            pending = b""
            if len(chunk) > room:
                return False
            room -= len(chunk)
            sink(chunk)
            if not self.zlib.unconsumed_tail:
                break
        return True


def _raw(response: httpx.Response) -> Iterator[bytes]:
    """The body as it arrives, still encoded."""
    yield from response.iter_raw()


def fetch(
    client: httpx.Client,
    request: httpx.Request,
    *,
    limits: Limits,
    stop: threading.Event | None = None,
    what: str = "the answer",
) -> Answer:
    """Send `request` and read its answer within `limits`; never raises for network trouble.

    `what` names the body in the cap's error ("the /metrics answer").
    """
    started = time.monotonic()
    watchdog = _Watchdog(limits.deadline, stop)
    request.extensions["trace"] = watchdog.trace
    # Each socket read also gives up within the deadline (a silent server).
    request.extensions["timeout"] = httpx.Timeout(limits.deadline).as_dict()
    watchdog.thread.start()
    body = bytearray()
    try:
        response = client.send(request, stream=True)
        try:
            try:
                # A response made whole in memory (a test's MockTransport) is decoded already.
                encoding = (
                    ""
                    if response.is_stream_consumed
                    else response.headers.get("content-encoding", "")
                )
                decoder = _Decoder(encoding)
            except ValueError as err:
                return Answer(
                    status=response.status_code,
                    headers=response.headers,
                    error=str(err),
                    seconds=time.monotonic() - started,
                )
            chunks = [response.content] if response.is_stream_consumed else _raw(response)
            for raw in chunks:
                if watchdog.expired():
                    break
                if not decoder.feed(raw, limits.max_bytes - len(body), body.extend):
                    return Answer(
                        status=response.status_code,
                        headers=response.headers,
                        error=f"{what} is larger than the {human_size(limits.max_bytes)} cap "
                        "(not kept; raise it with --max-size)",
                        seconds=time.monotonic() - started,
                    )
            status, headers = response.status_code, response.headers
        finally:
            response.close()
    except (httpx.HTTPError, zlib.error, OSError) as err:
        why = watchdog.expired()
        if not why:
            if isinstance(err, httpx.TimeoutException):
                why = "deadline"
            else:
                return Answer(
                    error=f"{type(err).__name__}: {err}", seconds=time.monotonic() - started
                )
        return _late(why, limits, started)
    finally:
        watchdog.done.set()
    why = watchdog.expired()
    if why:
        return _late(why, limits, started)
    return Answer(
        status=status, headers=headers, body=bytes(body), seconds=time.monotonic() - started
    )


def _late(why: str, limits: Limits, started: float) -> Answer:
    if why == "interrupted":
        error = "interrupted before the answer was complete"
    else:
        error = (
            f"no complete answer within {limits.deadline:g} s "
            "(the deadline covers connect, headers and body; raise it with --timeout)"
        )
    return Answer(error=error, seconds=time.monotonic() - started)
