"""A local stand-in for Twilio's Messages REST API, speaking its request and response format.

POST /2010-04-01/Accounts/{AccountSid}/Messages.json with a form-encoded To/From/Body
and HTTP basic auth (AccountSid:AuthToken) answers 201 with the message resource
({"sid", "status": "queued", ...}); errors answer {code, message, more_info, status}.
Tests queue the answers they want; unqueued requests are accepted.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

ACCOUNT_SID = "AC" + "0" * 31 + "1"
AUTH_TOKEN = "twilio-test-auth-token"
FROM = "+15005550006"


@dataclass
class Recorded:
    path: str
    authorization: str
    content_type: str
    form: dict[str, str]


@dataclass
class FakeTwilio:
    server: ThreadingHTTPServer
    requests: list[Recorded] = field(default_factory=list)
    answers: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer_error(
        self, status: int, code: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        self.answers.append(
            (
                status,
                {
                    "code": code,
                    "message": message,
                    "more_info": f"https://www.twilio.com/docs/errors/{code}",
                    "status": status,
                },
                headers or {},
            )
        )


_sids = itertools.count(1)


def _message_resource(form: dict[str, str], account_sid: str) -> dict[str, Any]:
    return {
        "sid": f"SM{next(_sids):032x}",
        "account_sid": account_sid,
        "to": form.get("To"),
        "from": form.get("From"),
        "body": form.get("Body"),
        "status": "queued",
        "num_segments": "1",
        "direction": "outbound-api",
        "api_version": "2010-04-01",
        "error_code": None,
        "error_message": None,
    }


def start_fake_twilio() -> FakeTwilio:
    fake: FakeTwilio

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            fake.requests.append(
                Recorded(
                    self.path,
                    self.headers.get("authorization", ""),
                    self.headers.get("content-type", ""),
                    form,
                )
            )
            expected = f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
            credentials = base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
            if fake.answers:
                status, body, headers = fake.answers.pop(0)
            elif self.path != expected:
                status, body, headers = 404, {"code": 20404, "message": "Not found"}, {}
            elif self.headers.get("authorization") != f"Basic {credentials}":
                status, body, headers = 401, {"code": 20003, "message": "Authenticate"}, {}
            else:
                status, body, headers = 201, _message_resource(form, ACCOUNT_SID), {}
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake = FakeTwilio(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return fake
