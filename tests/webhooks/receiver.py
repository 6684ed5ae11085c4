"""A real local HTTP server receiving webhooks, as a partner's would: it records each
request and answers what the test tells it to (a status, after a delay), or is down."""

from __future__ import annotations

import hashlib
import hmac
import json
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
    """The partner's check, written from CONTRACT §9 alone: t=<unix>,v1=<hex HMAC-SHA256
    of "<t>.<raw body>" keyed with the whole secret>."""
    parts = dict(item.split("=", 1) for item in received.signature.split(","))
    timestamp = parts["t"]
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + received.body, hashlib.sha256
    ).hexdigest()
    fresh = abs(time.time() - int(timestamp)) <= tolerance
    return fresh and hmac.compare_digest(expected, parts["v1"])
