"""Hostile GitHub-like servers on 127.0.0.1 for the hostile-input table (issues 21 and 22).

One `HostileGitHub` answers what the upstream commands ask (issue listings, search, one
issue, comments, contents, rate limit, POSTs) the way a broken or hostile server would,
chosen by `mode`:

* `ok`: a well-behaved answer (an empty search, 404 for forms, no issues);
* `bad-number`: an issue listing where one item has `"number": "abc"`;
* `reset-far`: 403 with `X-RateLimit-Remaining: 0` and a 30-digit `X-RateLimit-Reset`;
* `rate-limit`: 403, remaining 0, reset in an hour;
* `huge`: a 200 whose JSON body is `HUGE_BYTES` long (streamed; never built in memory);
* `trickle`: headers and body one byte every `TRICKLE_S` seconds, for ever;
* `redirect`: 302 to another path;
* `garbage`: 200 with a body that is not JSON;
* `500`: every request answered 500;
* `escape-titles`: an issue whose title carries an OSC 52 clipboard write, a screen clear,
  a bidi override and a zero-width space;
* `reset-posts`: reads answer normally, every POST has its connection reset;
* `endless-comments`: an open issue carrying this bundle's marker (`marker_body`) whose
  comments pages never end (a `next` link on every page, 100 comments each).

Every request is counted in `requests`. The server is started and stopped by the test.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HUGE_BYTES = 80 << 20
TRICKLE_S = 0.25
TITLE_ESCAPES = (
    "hang in all_reduce \x1b]52;c;cHduZWQ=\x07 check_hicache_events \x1b[2J\u202eevil\u200b"
)


def _issue(number: Any, title: str, body: str = "", state: str = "open") -> dict[str, Any]:
    return {
        "number": number,
        "title": title,
        "body": body,
        "state": state,
        "labels": [],
        "comments": 0,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": f"2026-01-0{1 + (hash(str(number)) % 8)}T00:00:00Z",
        "html_url": f"https://github.com/a/b/issues/{number}",
        "repository_url": "https://api.github.com/repos/a/b",
    }


class HostileGitHub:
    """A GitHub-like server that misbehaves as `mode` says; see the module docstring."""

    def __init__(self, mode: str, *, marker_body: str = "", stack_body: str = "") -> None:
        self.mode = mode
        self.marker_body = marker_body
        self.stack_body = stack_body
        self.requests = 0
        self.stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> HostileGitHub:
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_owner: HostileGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the CLI's output, not the server's."""

    # --- answers ----------------------------------------------------------------------

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _reset(self) -> None:
        """Close the connection with an RST: the client sees a dropped connection."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def do_POST(self) -> None:
        owner = self.server_owner
        owner.requests += 1
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 1 << 20))
        if owner.mode == "reset-posts":
            self._reset()
            return
        self._json(201, {"number": 99, "html_url": "https://github.com/a/b/issues/99"})

    def do_GET(self) -> None:
        owner = self.server_owner
        owner.requests += 1
        split = urlsplit(self.path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        mode = owner.mode
        if mode == "500":
            self._json(500, {"message": "Server Error"})
            return
        if mode == "garbage":
            body = b"<html>\x00\xff not json"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "rate-limit" or mode == "reset-far":
            reset = "9" * 30 if mode == "reset-far" else str(int(time.time()) + 3600)
            self._json(
                403,
                {"message": "API rate limit exceeded"},
                {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
            )
            return
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", "/login")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            chunk = b" " * (1 << 20)
            try:
                # Exactly HUGE_BYTES: `[`, spaces, `]` (valid JSON: an empty list, 80 MiB long).
                self.wfile.write(b"[")
                for _ in range(HUGE_BYTES // len(chunk) - 1):
                    self.wfile.write(chunk)
                self.wfile.write(b" " * (len(chunk) - 2) + b"]")
            except OSError:
                pass  # the client stopped reading at its cap
            self.close_connection = True
            return
        if mode == "trickle":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: "
            try:
                for byte in head:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(TRICKLE_S)
                while not owner.stopping.is_set():
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(TRICKLE_S)
            except OSError:
                pass  # the client gave up: what the row checks
            self.close_connection = True
            return
        self._routes(path, query)

    def _routes(self, path: str, query: dict[str, str]) -> None:
        owner = self.server_owner
        mode = owner.mode
        if path == "/rate_limit":
            core = {"limit": 5000, "remaining": 4999, "reset": int(time.time()) + 3600}
            self._json(200, {"resources": {"core": core}})
        elif path == "/search/issues":
            self._json(200, {"total_count": 0, "incomplete_results": False, "items": []})
        elif "/contents/" in path:
            self._json(404, {"message": "Not Found"})
        elif path.endswith("/issues") and path.startswith("/repos/"):
            self._json(200, self._listing())
        elif path.endswith("/comments"):
            page = int(query.get("page", "1") or 1)
            comments = [
                {
                    "id": page * 1000 + n,
                    "body": "+1",
                    "html_url": f"https://github.com/a/b/issues/1#issuecomment-{page * 1000 + n}",
                    "user": {"login": "someone"},
                }
                for n in range(100)
            ]
            base = f"{owner.url}{path}"
            link = f'<{base}?per_page=100&page={page + 1}>; rel="next"'
            if mode != "endless-comments":
                link = ""
                comments = []
            self._json(200, comments, {"Link": link} if link else None)
        elif path.startswith("/repos/") and "/issues/" in path:
            number = path.rsplit("/", 1)[-1]
            item = _issue(int(number) if number.isdigit() else 1, "hang", owner.marker_body)
            item["url"] = f"{owner.url}{path}"
            item["comments_url"] = f"{owner.url}{path}/comments"
            self._json(200, item)
        elif path.startswith("/repos/") and path.count("/") == 3:
            name = path.removeprefix("/repos/")
            self._json(
                200, {"full_name": name, "name": name.split("/")[1], "url": owner.url + path}
            )
        else:
            self._json(404, {"message": "Not Found"})

    def _listing(self) -> list[dict[str, Any]]:
        owner = self.server_owner
        if owner.mode == "bad-number":
            return [_issue(1, "first"), _issue("abc", "broken"), _issue(3, "third")]
        if owner.mode == "escape-titles":
            return [_issue(7, TITLE_ESCAPES, owner.stack_body)]
        if owner.mode == "endless-comments":
            item = _issue(1, "hang", owner.marker_body)
            item["url"] = f"{owner.url}/repos/a/b/issues/1"
            item["comments_url"] = f"{owner.url}/repos/a/b/issues/1/comments"
            return [item]
        return []
