"""A real local HTTP server receiving webhooks, as a partner's would: it records each
request and answers what the test tells it to (a status, after a delay), or is down."""

from __future__ import annotations

import hashlib
import hmac
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    at: float
    signature: str
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # every header, names lower-case

    @property
    def event(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.body)
        return loaded


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def events(self) -> list[dict[str, Any]]:
        return [r.event for r in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_receiver(port: int = 0) -> Receiver:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if receiver.delay:
                time.sleep(receiver.delay)
            status = receiver.status
            if 200 <= status < 300:  # a receiver that failed did not take the event
                receiver.received.append(
                    Received(
                        time.monotonic(),
                        self.headers.get("PartnerLink-Signature", ""),
                        self.headers.get("content-type", ""),
                        body,
                        {name.lower(): value for name, value in self.headers.items()},
                    )
                )
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    receiver = Receiver(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver


def verified(received: Received, secret: str, tolerance: float = 300) -> bool:
    """The partner's check, written from CONTRACT §9 and §13 alone: t=<unix>,v1=<hex
    HMAC-SHA256 of "<t>.<raw body>" keyed with the whole secret>, one `v1=` per secret
    signing (two while a rotated secret still signs); any may match."""
    parts = [item.split("=", 1) for item in received.signature.split(",")]
    [timestamp] = [value for name, value in parts if name == "t"]
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + received.body, hashlib.sha256
    ).hexdigest()
    fresh = abs(time.time() - int(timestamp)) <= tolerance
    return fresh and any(
        hmac.compare_digest(expected, value) for name, value in parts if name == "v1"
    )


@dataclass
class Trickler:
    """A receiver that answers one byte a second (a long status line, then headers): the
    slowest answer a per-read timeout lets through. It records when each connection was
    accepted and when the sender closed it, and how many were open at once."""

    listener: socket.socket
    accepted: list[float] = field(default_factory=list)
    closed_after: list[float] = field(default_factory=list)  # seconds each connection lived
    open_now: int = 0
    most_open: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hooks"

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()


TRICKLED_ANSWER = b"HTTP/1.1 200 " + b"O" * 60 + b"K\r\ncontent-length: 0\r\n\r\n"


def start_trickler(byte_seconds: float = 1.0) -> Trickler:
    listener = socket.create_server(("127.0.0.1", 0))
    trickler = Trickler(listener)

    def answer(conn: socket.socket) -> None:
        accepted = time.monotonic()
        with trickler.lock:
            trickler.accepted.append(accepted)
            trickler.open_now += 1
            trickler.most_open = max(trickler.most_open, trickler.open_now)
        try:
            request = b""
            while b"\r\n\r\n" not in request:  # the headers; the small body comes along
                request += conn.recv(65536)
            for byte in TRICKLED_ANSWER:
                conn.sendall(bytes([byte]))
                readable, _, _ = select.select([conn], [], [], byte_seconds)
                if (readable and not conn.recv(65536)) or trickler.stopping.is_set():
                    break  # the sender hung up (or the test is over)
        except OSError:
            pass
        finally:
            with trickler.lock:
                trickler.open_now -= 1
                trickler.closed_after.append(time.monotonic() - accepted)
            conn.close()

    def serve() -> None:
        while not trickler.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return trickler
