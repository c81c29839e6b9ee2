"""A real HTTP server on 127.0.0.1 serving Prometheus text, for `report watch` tests.

Modes (`set_mode`, at any time): `healthy` (tokens flow, a few requests wait), `quiet`
(nothing runs or waits, no tokens), `wedged` (the token counter stops while the queue
grows by one per scrape) and `hung-health` (metrics as healthy, `/health` never answers
within the watcher's deadline). Counters move with the wall clock, so a scrape sees what
a real server would. Every request path is recorded: the watcher must ask nothing but
`/metrics` and the health route.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class State:
    mode: str = "healthy"
    tokens: float = 0.0
    queue: int = 0
    last: float = field(default_factory=time.monotonic)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)

    def exposition(self) -> str:
        with self.lock:
            now = time.monotonic()
            elapsed, self.last = now - self.last, now
            running = 0
            if self.mode in ("healthy", "hung-health"):
                self.tokens += 400.0 * elapsed
                self.queue, running = 2, 4
            elif self.mode == "wedged":
                self.queue += 1
                running = 4
            else:
                self.queue, running = 0, 0
            return (
                "# HELP sglang:generation_tokens_total Generated tokens.\n"
                "# TYPE sglang:generation_tokens_total counter\n"
                f'sglang:generation_tokens_total{{model_name="fixture"}} {self.tokens:.1f}\n'
                "# TYPE sglang:num_running_reqs gauge\n"
                f'sglang:num_running_reqs{{model_name="fixture"}} {running}\n'
                "# TYPE sglang:num_queue_reqs gauge\n"
                f'sglang:num_queue_reqs{{model_name="fixture"}} {self.queue}\n'
                "# TYPE sglang:cache_hit_rate gauge\n"
                f'sglang:cache_hit_rate{{model_name="fixture"}} 0.5\n'
            )


@dataclass(frozen=True)
class PromServer:
    url: str
    health: str
    state: State

    def set_mode(self, mode: str) -> None:
        with self.state.lock:
            self.state.mode = mode

    @property
    def paths(self) -> list[str]:
        with self.state.lock:
            return list(self.state.paths)


@contextmanager
def prom_server(mode: str = "healthy") -> Iterator[PromServer]:
    """Serve on an ephemeral port of 127.0.0.1 until the block ends."""
    state = State(mode=mode)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with state.lock:
                state.paths.append(self.path)
                hung = state.mode == "hung-health"
            if self.path == "/metrics":
                body = state.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path == "/health":
                if hung:
                    state.release.wait(5)  # past any deadline the tests give
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            else:
                self.send_response(404)
                self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        yield PromServer(
            url=f"http://127.0.0.1:{port}/metrics",
            health=f"http://127.0.0.1:{port}/health",
            state=state,
        )
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
