"""A phone system's callback endpoint for tests: a local HTTP server in a thread that
records every request (headers and body) and answers with what `answer` says (a
redirect's `Location` is `redirect_to`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, answer: Callable[[dict], int] | None = None, *, redirect_to: str = ""):
        self.answer = answer or (lambda event: 204)
        self.received: list[tuple[dict, bytes, int]] = []  # (headers, body, status answered)
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = receiver.answer(json.loads(body))
                with receiver.lock:
                    receiver.received.append((dict(self.headers), body, status))
                self.send_response(status)
                if redirect_to:
                    self.send_header("Location", redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/events"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self, status: int | None = None) -> list[dict]:
        with self.lock:
            return [json.loads(body) for _, body, answered in self.received if status is None or answered == status]
