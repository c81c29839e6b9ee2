"""A GitHub-like REST server on 127.0.0.1 for the client tests: real sockets, fake data.

Serves what `reporter.upstream.github` uses:

* `GET /repos/{owner}/{repo}/issues` with `state`, `since`, `sort=updated`, `direction`,
  `per_page`, `page`; `Link` headers (`next`, `last`, `first`, `prev`) with absolute
  URLs; a weak `ETag` per response body and `304 Not Modified` for a matching
  `If-None-Match` (which, as on GitHub, does not count against the rate limit);
* `GET /search/issues?q=...`: quoted phrases and words ANDed over title and body,
  `repo:` and `is:issue` qualifiers;
* `X-RateLimit-*` headers on every answer.

Faults are queued with `inject(Fault(...))` and consumed by the next matching request:
`rate-limit` (403, remaining 0, reset in `reset_in` s), `secondary` (403 with
`Retry-After`), `429` (with `Retry-After`), `500`/`502`/`503`, `timeout` (answers after
`stall` seconds), `reset` (closes the socket with RST), `malformed` (200 with broken
JSON), `link-loop` (a `next` link pointing at the page itself), `off-host` (a `next`
link to another host). Every request is logged in `requests`.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


@dataclass
class Fault:
    """One injected failure: `kind` (see the module docstring), for requests whose path
    and query contain `match`, `times` times."""

    kind: str
    match: str = ""
    times: int = 1
    retry_after: int = 1
    reset_in: int = 30


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int


@dataclass
class GitHubServer:
    """The server's state; `start()` binds an ephemeral port on 127.0.0.1."""

    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    requests: list[Seen] = field(default_factory=list)
    stall: float = 1.0
    remaining: int = 5000
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def inject(self, *faults: Fault) -> None:
        """Queue faults for the next matching requests."""
        with self._lock:
            self.faults.extend(faults)

    def add_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str = "",
        body: str = "",
        updated_at: str = "2025-01-01T00:00:00Z",
        state: str = "open",
        pull: bool = False,
    ) -> dict[str, Any]:
        """Add (or replace) an issue in GitHub's JSON shape."""
        item: dict[str, Any] = {
            "id": hash((repo, number)) & 0x7FFFFFFF,
            "number": number,
            "title": title or f"issue {number}",
            "body": body,
            "state": state,
            "state_reason": "completed" if state == "closed" else None,
            "labels": [{"name": "bug"}],
            "comments": 0,
            "created_at": "2024-12-01T00:00:00Z",
            "updated_at": updated_at,
            "closed_at": None,
            "html_url": f"https://github.com/{repo}/issues/{number}",
            "repository_url": f"https://api.github.com/repos/{repo}",
        }
        if pull:
            item["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
        with self._lock:
            items = self.issues.setdefault(repo, [])
            items[:] = [i for i in items if i["number"] != number]
            items.append(item)
        return item

    def count(self, path_part: str = "", status: int | None = None) -> int:
        """Requests seen whose path contains `path_part` (and with `status`, if given)."""
        return sum(
            1
            for r in self.requests
            if path_part in r.path and (status is None or r.status == status)
        )

    def take_fault(self, target: str) -> Fault | None:
        """The first queued fault matching `target`, used up by one."""
        with self._lock:
            for fault in self.faults:
                if fault.match in target and fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self.faults.remove(fault)
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    app: GitHubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests` instead."""

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        fault = self.app.take_fault(self.path)
        self._answer(parts.path, query, fault)

    def _log(self, status: int) -> None:
        """Record the request before its answer goes out, so a test that has the answer
        also sees the log entry."""
        parts = urlsplit(self.path)
        self.app.requests.append(
            Seen(
                method=self.command,
                path=parts.path,
                query={k: v[0] for k, v in parse_qs(parts.query).items()},
                headers={k.lower(): v for k, v in self.headers.items()},
                status=status,
            )
        )

    # --- answers --------------------------------------------------------------------

    def _answer(self, path: str, query: dict[str, str], fault: Fault | None) -> int:
        if fault is not None:
            handled = self._fault(fault)
            if handled:
                return handled
        if path == "/search/issues":
            return self._search(query)
        segments = path.strip("/").split("/")
        if len(segments) == 4 and segments[0] == "repos" and segments[3] == "issues":
            return self._listing(f"{segments[1]}/{segments[2]}", query, fault)
        return self._json(404, {"message": "Not Found"})

    def _fault(self, fault: Fault) -> int:
        """Answer with the fault and return its status (-1: connection dropped); 0 means
        "answer normally afterwards" (timeout, link faults)."""
        kind = fault.kind
        if kind == "rate-limit":
            reset = int(time.time()) + fault.reset_in
            return self._json(
                403,
                {"message": "API rate limit exceeded for 127.0.0.1."},
                {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
            )
        if kind == "secondary":
            return self._json(
                403,
                {"message": "You have exceeded a secondary rate limit."},
                {"Retry-After": str(fault.retry_after)},
            )
        if kind == "429":
            return self._json(
                429, {"message": "Too many requests"}, {"Retry-After": str(fault.retry_after)}
            )
        if kind in ("500", "502", "503"):
            return self._json(int(kind), {"message": "Server Error"})
        if kind == "timeout":
            time.sleep(self.app.stall)
            return 0
        if kind == "reset":
            self._log(-1)
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return -1
        if kind == "malformed":
            return self._raw(200, b'{"items": [ {"number": 1,', {})
        return 0

    def _listing(self, repo: str, query: dict[str, str], fault: Fault | None) -> int:
        if repo not in self.app.issues:
            return self._json(404, {"message": "Not Found"})
        items = list(self.app.issues[repo])
        since = query.get("since")
        if since:
            items = [i for i in items if i["updated_at"] >= since]
        reverse = query.get("direction", "desc") == "desc"
        items.sort(key=lambda i: (i["updated_at"], i["number"]), reverse=reverse)
        per_page = min(100, int(query.get("per_page", "30")))
        page = int(query.get("page", "1"))
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        base = f"{self.app.url}/repos/{repo}/issues"

        def link(n: int, rel: str) -> str:
            return f'<{base}?{urlencode({**query, "page": str(n)})}>; rel="{rel}"'

        if fault is not None and fault.kind == "link-loop":
            links.append(link(page, "next"))
        elif fault is not None and fault.kind == "off-host":
            links.append(f'<http://198.51.100.7/repos/{repo}/issues?page={page + 1}>; rel="next"')
        elif page < last:
            links.append(link(page + 1, "next"))
            links.append(link(last, "last"))
        if page > 1:
            links.append(link(1, "first"))
            links.append(link(page - 1, "prev"))
        body = json.dumps(chunk).encode()
        etag = 'W/"' + hashlib.sha1(body).hexdigest() + '"'
        if self.headers.get("If-None-Match") == etag:
            return self._raw(304, b"", {"ETag": etag}, count=False)
        headers = {"ETag": etag}
        if links:
            headers["Link"] = ", ".join(links)
        return self._raw(200, body, headers)

    def _search(self, query: dict[str, str]) -> int:
        q = query.get("q", "")
        words: list[str] = []
        repos: list[str] = []
        token = ""
        quoted = False
        for char in q + " ":
            if char == '"':
                quoted = not quoted
                continue
            if char == " " and not quoted:
                if token:
                    if token.startswith("repo:"):
                        repos.append(token[5:])
                    elif ":" not in token:
                        words.append(token.lower())
                token = ""
                continue
            token += char
        found: list[dict[str, Any]] = []
        for repo, items in sorted(self.app.issues.items()):
            if repos and repo not in repos:
                continue
            for item in items:
                if "pull_request" in item:
                    continue
                text = f"{item['title']}\n{item['body']}".lower()
                if all(word in text for word in words):
                    found.append({**item, "score": 1.0})
        found.sort(key=lambda i: (i["repository_url"], i["number"]))
        per_page = min(100, int(query.get("per_page", "30")))
        document = {
            "total_count": len(found),
            "incomplete_results": False,
            "items": found[:per_page],
        }
        return self._json(200, document, resource="search")

    # --- output ---------------------------------------------------------------------

    def _json(
        self,
        status: int,
        document: Any,
        headers: dict[str, str] | None = None,
        resource: str = "core",
    ) -> int:
        return self._raw(status, json.dumps(document).encode(), headers or {}, resource=resource)

    def _raw(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str],
        *,
        count: bool = True,
        resource: str = "core",
    ) -> int:
        app = self.app
        if count and "X-RateLimit-Remaining" not in headers:
            app.remaining = max(0, app.remaining - 1)
        self._log(status)
        self.send_response(status)
        defaults = {
            "Content-Type": "application/json; charset=utf-8",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": str(app.remaining),
            "X-RateLimit-Reset": str(int(time.time()) + 3600),
            "X-RateLimit-Used": str(5000 - app.remaining),
            "X-RateLimit-Resource": resource,
        }
        for key, value in {**defaults, **headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)
        return status
