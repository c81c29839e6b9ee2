"""A GitHub-like REST server on 127.0.0.1 for the client tests: real sockets, fake data.

Serves what `reporter.upstream.github` uses:

* `GET /repos/{owner}/{repo}/issues` with `state`, `since`, `sort=updated`, `direction`,
  `per_page`, `page`; `Link` headers (`next`, `last`, `first`, `prev`) with absolute
  URLs; a weak `ETag` per response body and `304 Not Modified` for a matching
  `If-None-Match` (which, as on GitHub, does not count against the rate limit);
* `GET /search/issues?q=...`: quoted phrases and words ANDed over title and body,
  `repo:` and `is:issue` qualifiers;
* `X-RateLimit-*` headers on every answer;
* for "fixed in" (as GitHub serves them): `GET /repos/{o}/{r}/issues/{n}/timeline`
  (`closed` events with `commit_id`, `cross-referenced` events whose `source.issue` is a
  pull request with `merged_at`), `GET /repos/{o}/{r}/pulls/{n}` (`merged_at`,
  `merge_commit_sha`), `GET /repos/{o}/{r}/tags` (newest first, paginated with `Link`)
  and `GET /repos/{o}/{r}/compare/{base}...{head}` (`status` `ahead`, `behind`,
  `identical` or `diverged`, from a linear history given with `add_commits`;
  an unknown ref is a 404);
* for filing: `GET /user` (the token user, `reporter-bot`), `creator=` on the issue
  listing, `GET /repos/{o}/{r}/issues/{n}`, `POST /repos/{o}/{r}/issues`
  (201 with `number`, `html_url`, `url`), `GET|POST /repos/{o}/{r}/issues/{n}/comments`, and
  `GET /repos/{o}/{r}/contents/{path}` (a folder listing, or a file as base64) from `files`.

Faults are queued with `inject(Fault(...))` and consumed by the next matching request:
`rate-limit` (403, remaining 0, reset in `reset_in` s), `secondary` (403 with
`Retry-After`), `429` (with `Retry-After`), `500`/`502`/`503`, `timeout` (answers after
`stall` seconds), `reset` (closes the socket with RST), `malformed` (200 with broken
JSON), `link-loop` (a `next` link pointing at the page itself), `off-host` (a `next`
link to another host). A fault with `method="POST"` only meets POSTs; a `timeout` on a POST
stalls *after* the issue or comment was stored (the client times out on a request that
succeeded), a `rate-limit`/`secondary`/`429` on a POST refuses it (nothing stored). Every
request is logged in `requests`.
"""

from __future__ import annotations

import base64
import contextlib
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
    method: str = ""
    times: int = 1
    retry_after: int = 1
    reset_in: int = 30


@dataclass(frozen=True)
class Canned:
    """One scripted answer (`GitHubServer.answer_with`): `body` is sent as JSON unless it is
    bytes; `{url}` in a header is the server's URL; `stall` seconds pass before it is sent;
    `fault` answers with that fault kind instead (`reset`: the socket closed with RST)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0
    fault: str = ""


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int
    body: bytes = b""


@dataclass
class GitHubServer:
    """The server's state; `start()` binds an ephemeral port on 127.0.0.1."""

    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    canned: list[Canned] = field(default_factory=list)
    requests: list[Seen] = field(default_factory=list)
    timelines: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    history: dict[str, list[str]] = field(default_factory=dict)
    tags: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    stall: float = 1.0
    remaining: int = 5000
    _next_id: int = 1000
    _repeat: bool = False
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

    def answer_with(self, *answers: Canned, repeat: bool = False) -> None:
        """Answer the next GETs with `answers`, in order, whatever they ask (the last one
        for ever with `repeat`): the client's own rules tested over a real socket."""
        with self._lock:
            self.canned.extend(answers)
            self._repeat = repeat

    def take_canned(self) -> Canned | None:
        """The next scripted answer, or None."""
        with self._lock:
            if not self.canned:
                return None
            if len(self.canned) == 1 and self._repeat:
                return self.canned[0]
            return self.canned.pop(0)

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

    def add_comment(
        self, repo: str, number: int, body: str, *, login: str = "someone"
    ) -> dict[str, Any]:
        """Add a comment to an issue, in GitHub's JSON shape."""
        with self._lock:
            self._next_id += 1
            comment = {
                "id": self._next_id,
                "body": body,
                "user": {"login": login},
                "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{self._next_id}",
                "created_at": "2025-01-02T00:00:00Z",
                "updated_at": "2025-01-02T00:00:00Z",
            }
            self.comments.setdefault((repo, number), []).append(comment)
            for item in self.issues.get(repo, []):
                if item["number"] == number:
                    item["comments"] = len(self.comments[(repo, number)])
        return comment

    def close_issue(self, repo: str, number: int, reason: str = "completed") -> None:
        """Close an issue with a `state_reason` (`completed`, `not_planned`, `duplicate`)."""
        with self._lock:
            for item in self.issues.get(repo, []):
                if item["number"] == number:
                    item.update(
                        state="closed", state_reason=reason, closed_at="2025-01-03T00:00:00Z"
                    )

    def add_commits(self, repo: str, shas: list[str]) -> None:
        """Append commits to `repo`'s (linear) history, oldest first."""
        with self._lock:
            self.history.setdefault(repo, []).extend(shas)

    def add_tag(self, repo: str, name: str, sha: str) -> None:
        """Tag a commit of the history (tags list newest first, as GitHub lists them)."""
        with self._lock:
            self.tags.setdefault(repo, []).insert(0, (name, sha))

    def fix_issue(
        self,
        repo: str,
        number: int,
        *,
        sha: str,
        pull: int | None = None,
        closing_commit: bool = True,
        merged_at: str = "2025-01-02T12:00:00Z",
    ) -> None:
        """Close an issue as completed by a change: the timeline gets a `cross-referenced`
        event from pull request `pull` (merged as `sha`) when given, and a `closed` event
        whose `commit_id` is `sha` when `closing_commit` (a "Fixes #N" merge) or None (a
        maintainer closed it by hand after the linked pull request was merged)."""
        self.close_issue(repo, number)
        events: list[dict[str, Any]] = [
            {"event": "labeled", "created_at": "2024-12-02T00:00:00Z", "label": {"name": "bug"}}
        ]
        if pull is not None:
            source = {
                "number": pull,
                "title": f"Fix for #{number}",
                "html_url": f"https://github.com/{repo}/pull/{pull}",
                "repository_url": f"https://api.github.com/repos/{repo}",
                "state": "closed",
                "pull_request": {
                    "url": f"https://api.github.com/repos/{repo}/pulls/{pull}",
                    "html_url": f"https://github.com/{repo}/pull/{pull}",
                    "merged_at": merged_at,
                },
            }
            events.append(
                {
                    "event": "cross-referenced",
                    "created_at": "2025-01-01T00:00:00Z",
                    "source": {"type": "issue", "issue": source},
                }
            )
            with self._lock:
                self.pulls[(repo, pull)] = {
                    "number": pull,
                    "state": "closed",
                    "merged_at": merged_at,
                    "merge_commit_sha": sha,
                    "html_url": f"https://github.com/{repo}/pull/{pull}",
                }
        events.append(
            {
                "event": "closed",
                "created_at": "2025-01-03T00:00:00Z",
                "commit_id": sha if closing_commit else None,
                "commit_url": (
                    f"https://api.github.com/repos/{repo}/commits/{sha}" if closing_commit else None
                ),
                "state_reason": "completed",
            }
        )
        with self._lock:
            self.timelines[(repo, number)] = events

    def add_files(self, repo: str, files: dict[str, str]) -> None:
        """Serve `files` (path -> text) through the contents API of `repo`."""
        with self._lock:
            self.files.setdefault(repo, {}).update(files)

    def posts(self, path_part: str = "") -> list[Seen]:
        """POST requests seen whose path contains `path_part`."""
        return [r for r in self.requests if r.method == "POST" and path_part in r.path]

    def count(self, path_part: str = "", status: int | None = None) -> int:
        """Requests seen whose path contains `path_part` (and with `status`, if given)."""
        return sum(
            1
            for r in self.requests
            if path_part in r.path and (status is None or r.status == status)
        )

    def take_fault(self, target: str, method: str = "GET") -> Fault | None:
        """The first queued fault matching `target` (and `method`), used up by one."""
        with self._lock:
            for fault in self.faults:
                if fault.method and fault.method != method:
                    continue
                if fault.match in target and fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self.faults.remove(fault)
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    app: GitHubServer
    protocol_version = "HTTP/1.1"
    posted: bytes = b""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests` instead."""

    def do_GET(self) -> None:
        canned = self.app.take_canned()
        if canned is not None:
            self._canned(canned)
            return
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        fault = self.app.take_fault(self.path)
        self._answer(parts.path, query, fault)

    def _canned(self, answer: Canned) -> None:
        if answer.stall:
            time.sleep(answer.stall)
        if answer.fault:
            self._fault(Fault(answer.fault))
            return
        body = (
            answer.body
            if isinstance(answer.body, bytes)
            else json.dumps([] if answer.body is None else answer.body).encode()
        )
        headers = {k: v.replace("{url}", self.app.url) for k, v in answer.headers.items()}
        with contextlib.suppress(OSError):
            self._raw(answer.status, body, headers, count=False)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.posted = raw
        parts = urlsplit(self.path)
        fault = self.app.take_fault(self.path, "POST")
        if fault is not None and fault.kind not in ("timeout",) and self._fault(fault):
            return
        try:
            document = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"message": "Problems parsing JSON"})
            return
        segments = parts.path.strip("/").split("/")
        if len(segments) == 4 and segments[0] == "repos" and segments[3] == "issues":
            status, answer = self._create_issue(f"{segments[1]}/{segments[2]}", document)
        elif len(segments) == 6 and segments[0] == "repos" and segments[5] == "comments":
            status, answer = self._create_comment(
                f"{segments[1]}/{segments[2]}", segments[4], document
            )
        else:
            status, answer = 404, {"message": "Not Found"}
        if fault is not None and fault.kind == "timeout":
            # The write happened; the answer comes too late for the client.
            self._log(status)  # logged now: the test may look before the answer goes out
            time.sleep(self.app.stall)
            with contextlib.suppress(OSError):
                self._json(status, answer, log=False)
            return
        self._json(status, answer)

    def _create_issue(self, repo: str, document: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not isinstance(document.get("title"), str) or not document["title"]:
            return 422, {"message": "Validation Failed", "errors": [{"field": "title"}]}
        body = document.get("body") or ""
        if len(body) > 65536:
            return 422, {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "Issue",
                        "code": "custom",
                        "field": "body",
                        "message": "body is too long (maximum is 65536 characters)",
                    }
                ],
            }
        app = self.app
        with app._lock:
            number = max((i["number"] for i in app.issues.get(repo, [])), default=0) + 1
            app._next_id += 1
            stamp = f"2025-06-01T00:{app._next_id // 60 % 60:02d}:{app._next_id % 60:02d}Z"
        item = app.add_issue(repo, number, title=document["title"], body=body, updated_at=stamp)
        with app._lock:
            item["created_at"] = stamp
            item["labels"] = [{"name": str(n)} for n in document.get("labels") or []]
            item["user"] = {"login": "reporter-bot"}
        return 201, self._issue_json(item)

    def _create_comment(
        self, repo: str, number: str, document: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        if not number.isdigit() or not any(
            i["number"] == int(number) for i in self.app.issues.get(repo, [])
        ):
            return 404, {"message": "Not Found"}
        body = document.get("body") or ""
        if len(body) > 65536:
            return 422, {"message": "Validation Failed", "errors": [{"resource": "IssueComment"}]}
        return 201, self.app.add_comment(repo, int(number), body, login="reporter-bot")

    def _issue_json(self, item: dict[str, Any]) -> dict[str, Any]:
        repo = item["repository_url"].rsplit("/repos/", 1)[-1]
        return {
            **item,
            "url": f"{self.app.url}/repos/{repo}/issues/{item['number']}",
            "user": item.get("user") or {"login": "someone"},
        }

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
                body=self.posted,
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
        if path == "/user":
            if "authorization" not in {k.lower() for k in self.headers}:
                return self._json(401, {"message": "Requires authentication"})
            return self._json(200, {"login": "reporter-bot"})
        if path == "/rate_limit":
            # As on GitHub: free, and the numbers of the caller (60 without a token).
            authed = "authorization" in {k.lower() for k in self.headers}
            core = {
                "limit": 5000 if authed else 60,
                "remaining": self.app.remaining if authed else 60,
                "reset": int(time.time()) + 3600,
            }
            return self._raw(
                200,
                json.dumps({"resources": {"core": core}, "rate": core}).encode(),
                {},
                count=False,
            )
        segments = path.strip("/").split("/")
        if len(segments) == 4 and segments[0] == "repos" and segments[3] == "issues":
            return self._listing(f"{segments[1]}/{segments[2]}", query, fault)
        if len(segments) == 4 and segments[0] == "repos" and segments[3] == "tags":
            repo = f"{segments[1]}/{segments[2]}"
            tags = [
                {"name": name, "commit": {"sha": sha, "url": f"{self.app.url}/commits/{sha}"}}
                for name, sha in self.app.tags.get(repo, [])
            ]
            return self._pages(f"/repos/{repo}/tags", tags, query)
        if len(segments) == 5 and segments[0] == "repos" and segments[3] == "compare":
            return self._compare(f"{segments[1]}/{segments[2]}", segments[4])
        if len(segments) == 5 and segments[0] == "repos" and segments[3] == "pulls":
            found = self.app.pulls.get((f"{segments[1]}/{segments[2]}", int(segments[4])))
            if found is None:
                return self._json(404, {"message": "Not Found"})
            return self._json(200, found)
        if len(segments) >= 4 and segments[0] == "repos" and segments[3] == "contents":
            return self._contents(f"{segments[1]}/{segments[2]}", "/".join(segments[4:]))
        if len(segments) in (5, 6) and segments[0] == "repos" and segments[3] == "issues":
            repo = f"{segments[1]}/{segments[2]}"
            item = next(
                (i for i in self.app.issues.get(repo, []) if str(i["number"]) == segments[4]), None
            )
            if item is None:
                return self._json(404, {"message": "Not Found"})
            if len(segments) == 5:
                return self._json(200, self._issue_json(item))
            if segments[5] == "timeline":
                events = self.app.timelines.get((repo, item["number"]), [])
                return self._pages(f"/repos/{repo}/issues/{item['number']}/timeline", events, query)
            if segments[5] == "comments":
                comments = self.app.comments.get((repo, item["number"]), [])
                per_page = min(100, int(query.get("per_page", "30")))
                page = int(query.get("page", "1"))
                return self._json(200, comments[(page - 1) * per_page : page * per_page])
        return self._json(404, {"message": "Not Found"})

    def _contents(self, repo: str, path: str) -> int:
        files = self.app.files.get(repo)
        if files is None:
            return self._json(404, {"message": "Not Found"})
        path = path.strip("/")
        if path in files:
            data = base64.b64encode(files[path].encode()).decode()
            return self._json(
                200,
                {
                    "type": "file",
                    "name": path.rsplit("/", 1)[-1],
                    "path": path,
                    "encoding": "base64",
                    "content": data,
                },
            )
        inside = sorted(
            p for p in files if p.startswith(path + "/") and "/" not in p[len(path) + 1 :]
        )
        if not inside:
            return self._json(404, {"message": "Not Found"})
        listing = [{"type": "file", "name": p.rsplit("/", 1)[-1], "path": p} for p in inside]
        body = json.dumps(listing).encode()
        etag = 'W/"' + hashlib.sha1(body).hexdigest() + '"'
        if self.headers.get("If-None-Match") == etag:
            return self._raw(304, b"", {"ETag": etag}, count=False)
        return self._raw(200, body, {"ETag": etag})

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
        creator = query.get("creator")
        if creator:
            items = [i for i in items if (i.get("user") or {}).get("login") == creator]
        since = query.get("since")
        if since:
            items = [i for i in items if i["updated_at"] >= since]
        reverse = query.get("direction", "desc") == "desc"
        order = "created_at" if query.get("sort") == "created" else "updated_at"
        items.sort(key=lambda i: (i[order], i["number"]), reverse=reverse)
        items = [self._issue_json(i) for i in items]
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

    def _pages(self, path: str, items: list[dict[str, Any]], query: dict[str, str]) -> int:
        """One page of `items` with GitHub's `Link` header (absolute URLs)."""
        per_page = min(100, int(query.get("per_page", "30")))
        page = int(query.get("page", "1"))
        last = max(1, -(-len(items) // per_page))
        links = []

        def link(n: int, rel: str) -> str:
            return f'<{self.app.url}{path}?{urlencode({**query, "page": str(n)})}>; rel="{rel}"'

        if page < last:
            links.append(link(page + 1, "next"))
            links.append(link(last, "last"))
        if page > 1:
            links.append(link(1, "first"))
            links.append(link(page - 1, "prev"))
        headers = {"Link": ", ".join(links)} if links else {}
        return self._json(200, items[(page - 1) * per_page : page * per_page], headers)

    def _compare(self, repo: str, spec: str) -> int:
        """`base...head` over the linear history: where head stands relative to base."""
        base, _, head = spec.partition("...")
        history = self.app.history.get(repo, [])
        tags = dict(self.app.tags.get(repo, []))

        def position(ref: str) -> int | None:
            sha = tags.get(ref, ref)
            matches = [i for i, s in enumerate(history) if s.startswith(sha)]
            return matches[0] if matches else None

        at_base, at_head = position(base), position(head)
        if at_base is None or at_head is None:
            return self._json(404, {"message": "Not Found"})
        status = "identical" if at_head == at_base else "ahead" if at_head > at_base else "behind"
        return self._json(
            200,
            {
                "status": status,
                "ahead_by": max(0, at_head - at_base),
                "behind_by": max(0, at_base - at_head),
                "total_commits": max(0, at_head - at_base),
            },
        )

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
        log: bool = True,
    ) -> int:
        return self._raw(
            status, json.dumps(document).encode(), headers or {}, resource=resource, log=log
        )

    def _raw(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str],
        *,
        count: bool = True,
        resource: str = "core",
        log: bool = True,
    ) -> int:
        app = self.app
        if count and "X-RateLimit-Remaining" not in headers:
            app.remaining = max(0, app.remaining - 1)
        if log:
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
