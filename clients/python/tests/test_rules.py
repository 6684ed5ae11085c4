"""SPEC's handling rules, against a tiny local HTTP server that answers what each test
scripts (counting the requests), and webhook verification against signatures computed
here with hmac."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from partnerlink_client import (
    AsyncPartnerLinkClient,
    BadRequest,
    Forbidden,
    Gone,
    InvalidSignature,
    NotFound,
    PartnerLinkClient,
    RetryPolicy,
    ServerError,
    verify_standard_webhook,
    verify_webhook,
)
from standardwebhooks.webhooks import Webhook

FAST = RetryPolicy(attempts=4, base_seconds=0.001, cap_seconds=0.01)


class Scripted:
    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, Any]]] = []
        self.paths: list[str] = []
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                scripted.paths.append(
                    self.path.split("?")[0] + " " + self.headers.get("authorization", "")
                )
                status, body = scripted.answers.pop(0) if scripted.answers else (200, {})
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = _answer

        return Handler


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.server.shutdown()


def problem(status: int, code: str) -> tuple[int, dict[str, Any]]:
    return status, {
        "status": status,
        "code": code,
        "detail": code,
        "errors": [{"field": "x", "message": "y"}],
    }


def test_500_is_retried_with_backoff_then_succeeds(scripted: Scripted) -> None:
    scripted.answers = [
        problem(500, "internal_error"),
        problem(500, "unavailable"),
        (200, {"greenInvoices": True}),
    ]
    with PartnerLinkClient(scripted.url, access_token="plk_at_a", policy=FAST) as pl:
        assert pl.get_store() == {"greenInvoices": True}
    assert len(scripted.paths) == 3


def test_500_every_time_raises_after_the_last_attempt(scripted: Scripted) -> None:
    scripted.answers = [problem(500, "internal_error")] * 6
    with (
        PartnerLinkClient(scripted.url, access_token="plk_at_a", policy=FAST) as pl,
        pytest.raises(ServerError),
    ):
        pl.get_store()
    assert len(scripted.paths) == 4


@pytest.mark.parametrize(("status", "kind"), [(400, BadRequest), (404, NotFound), (410, Gone)])
def test_400_404_410_are_never_retried(
    scripted: Scripted, status: int, kind: type[Exception]
) -> None:
    scripted.answers = [problem(status, "refused"), (200, {})]
    with (
        PartnerLinkClient(scripted.url, access_token="plk_at_a", policy=FAST) as pl,
        pytest.raises(kind) as raised,
    ):
        pl.get_store()
    assert len(scripted.paths) == 1
    assert raised.value.code == "refused" and raised.value.errors == [
        {"field": "x", "message": "y"}
    ]  # type: ignore[attr-defined]


def test_403_refreshes_once_then_raises(scripted: Scripted) -> None:
    scripted.answers = [
        problem(403, "invalid_token"),
        (200, {"accessToken": "plk_at_new", "expiration": "2027-01-01T00:00:00Z", "success": True}),
        problem(403, "invalid_token"),
    ]
    with (
        PartnerLinkClient(
            scripted.url,
            client_id="plk_ci_a",
            client_secret="plk_cs_a",
            access_token="plk_at_old",
            refresh_token="plk_rt_a",
            policy=FAST,
        ) as pl,
        pytest.raises(Forbidden),
    ):
        pl.get_store()
    assert scripted.paths == [
        "/v1/stores Bearer plk_at_old",
        "/v1/auth/token ",
        "/v1/stores Bearer plk_at_new",
    ]


def test_403_without_a_refresh_token_raises_at_once(scripted: Scripted) -> None:
    scripted.answers = [problem(403, "invalid_token")]
    with (
        PartnerLinkClient(scripted.url, access_token="plk_at_a", policy=FAST) as pl,
        pytest.raises(Forbidden),
    ):
        pl.get_store()
    assert len(scripted.paths) == 1


def test_no_answer_is_retried_then_raised() -> None:
    from partnerlink_client import ConnectionFailed

    with (
        PartnerLinkClient("http://127.0.0.1:9", access_token="plk_at_a", policy=FAST) as pl,
        pytest.raises(ConnectionFailed),
    ):
        pl.get_store()


def test_the_async_client_follows_the_same_rules(scripted: Scripted) -> None:
    scripted.answers = [
        problem(500, "unavailable"),
        (200, {"greenInvoices": False}),
        problem(404, "unknown_code"),
    ]

    async def run() -> None:
        async with AsyncPartnerLinkClient(scripted.url, access_token="plk_at_a", policy=FAST) as pl:
            assert await pl.get_store() == {"greenInvoices": False}
            with pytest.raises(NotFound):
                await pl.pair(123456)

    asyncio.run(run())
    assert len(scripted.paths) == 3


def test_backoff_grows_and_is_jittered() -> None:
    policy = RetryPolicy(base_seconds=1.0, cap_seconds=8.0)
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)):
        delays = {policy.delay(attempt) for _ in range(50)}
        assert all(0 <= d <= ceiling for d in delays) and len(delays) > 1
    assert policy.delay(1, retry_after=5.0) >= 5.0


def sign(secret: str, body: bytes, timestamp: int) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def test_webhook_signatures_are_verified() -> None:
    secret = "whsec_" + "k" * 43
    body = b'{"id":"evt_1","type":"store.settings.updated","createdAt":"2026-11-24T00:00:00Z","data":{}}'
    now = int(time.time())
    header = f"t={now},v1={sign(secret, body, now)}"
    assert verify_webhook(secret, body, header)["id"] == "evt_1"
    rotated = f"t={now},v1={sign('whsec_old', body, now)},v1={sign(secret, body, now)}"
    assert verify_webhook(secret, body, rotated)["type"] == "store.settings.updated"
    for bad_header, bad_body in (
        (header, body.replace(b"evt_1", b"evt_2")),
        (f"t={now},v1={sign('whsec_other', body, now)}", body),
        (f"t={now - 600},v1={sign(secret, body, now - 600)}", body),
        ("v1=abc", body),
        ("", body),
    ):
        with pytest.raises(InvalidSignature):
            verify_webhook(secret, bad_body, bad_header)


def test_standard_webhook_signatures_are_verified() -> None:
    """Headers as the `standardwebhooks` library signs them, one secret or two (a rotation)."""
    secret = "whsec_" + base64.b64encode(bytes(range(32))).decode()
    old = "whsec_" + base64.b64encode(b"o" * 24).decode()
    body = b'{"id":"evt_1","type":"store.settings.updated","createdAt":"2026-11-24T00:00:00Z","data":{}}'
    moment = datetime.now(UTC)
    stamp = str(int(moment.timestamp()))

    def signed(*secrets: str, at: datetime = moment) -> dict[str, str]:
        signatures = [Webhook(s).sign("evt_1", at, body.decode()) for s in secrets]
        return {
            "Webhook-Id": "evt_1",
            "Webhook-Timestamp": str(int(at.timestamp())),
            "Webhook-Signature": " ".join(signatures),
        }

    assert verify_standard_webhook(secret, body, signed(secret))["id"] == "evt_1"
    assert verify_standard_webhook(secret, body, signed(secret, old))["id"] == "evt_1"
    assert verify_standard_webhook(old, body, signed(secret, old))["id"] == "evt_1"
    ten_minutes_ago = moment - timedelta(minutes=10)
    for bad_secret, bad_body, bad_headers in (
        (secret, body.replace(b"evt_1", b"evt_2"), signed(secret)),
        (secret, body, signed(old)),
        (secret, body, signed(secret, at=ten_minutes_ago)),
        (secret, body, {**signed(secret), "Webhook-Id": "evt_2"}),
        (secret, body, {"Webhook-Id": "evt_1", "Webhook-Timestamp": stamp}),
        ("whsec_" + "k" * 43, body, signed(secret)),  # not padded base64: not Standard
    ):
        with pytest.raises(InvalidSignature):
            verify_standard_webhook(bad_secret, bad_body, bad_headers)
