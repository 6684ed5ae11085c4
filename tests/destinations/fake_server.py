"""What the local Meta and Google stand-ins share: a threaded HTTP server on 127.0.0.1
(a random port) whose next answers a test can script.

A scripted answer replaces the platform's own for the next request(s): a status with a
JSON body and headers, a body that is not JSON (`garbage`), or no answer for a while
(`hang`, released when the server stops). Unscripted requests get the stand-in's own
checks and answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Scripted:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is (garbage) instead of JSON
    hang_seconds: float = 0.0


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeServer:
    """Subclasses implement `handle(request) -> Answer` (under `self.lock`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[Request] = []
        self.script: list[Scripted] = []
        self._released = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or "0")
                body = self.rfile.read(length) if length else b""
                request = Request(
                    self.command,
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    body,
                )
                with fake.lock:
                    fake.requests.append(request)
                    scripted = fake.script.pop(0) if fake.script else None
                if scripted and scripted.hang_seconds:
                    # No answer for a while (the client gives up first), then the usual one.
                    if fake._released.wait(scripted.hang_seconds):
                        return
                    scripted = None
                if scripted:
                    answer = Answer(scripted.status, scripted.body, scripted.headers)
                    payload = (
                        scripted.raw
                        if scripted.raw is not None
                        else json.dumps(scripted.body).encode()
                    )
                else:
                    with fake.lock:
                        answer = fake.handle(request)
                    payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header(
                    "content-type",
                    "text/html" if scripted and scripted.raw is not None else "application/json",
                )
                self.send_header("content-length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def handle(self, request: Request) -> Answer:  # pragma: no cover - overridden
        raise NotImplementedError

    def stop(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # -- scripting the next answers ------------------------------------------------------

    def answer_next(
        self, status: int, body: Any, headers: dict[str, str] | None = None, times: int = 1
    ) -> None:
        with self.lock:
            self.script.extend(Scripted(status, body, headers or {}) for _ in range(times))

    def garbage_next(self, status: int = 200, times: int = 1) -> None:
        page = b"<html><body>502 Bad Gateway</body></html>"
        with self.lock:
            self.script.extend(Scripted(status, raw=page) for _ in range(times))

    def hang_next(self, seconds: float = 60.0, times: int = 1) -> None:
        with self.lock:
            self.script.extend(Scripted(hang_seconds=seconds) for _ in range(times))

    def requests_to(self, match: Callable[[Request], bool]) -> list[Request]:
        with self.lock:
            return [request for request in self.requests if match(request)]
