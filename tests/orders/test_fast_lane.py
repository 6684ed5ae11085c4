"""The orders' fast lane: well-formed orders skip FastAPI's route, everything else reaches it
untouched, and both answer alike."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session
from starlette.types import Message, Receive, Scope, Send

from partnerlink.orders.intake.fast_lane import OrdersFastLane
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import count_orders, order_body


class RecordingRoute:
    """Stands for the FastAPI route behind the lane: notes what reaches it, answers 599."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.messages: list[Message] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks = []
        while True:
            message = await receive()
            self.messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        self.bodies.append(b"".join(chunks))
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def call_lane(
    app: FastAPI,
    messages: list[Message],
    headers: dict[str, str],
    query: bytes = b"",
) -> tuple[RecordingRoute, list[Message]]:
    route = RecordingRoute()
    lane = OrdersFastLane(route)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/orders",
        "query_string": query,
        "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()],
        "app": app,
    }
    pending = list(messages)
    sent: list[Message] = []

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(lane(scope, receive, send))
    return route, sent


def whole(body: bytes) -> list[Message]:
    return [{"type": "http.request", "body": body, "more_body": False}]


def in_chunks(body: bytes, size: int) -> list[Message]:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]


JSON = {"content-type": "application/json"}


def test_a_well_formed_order_is_stored_without_the_route(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    body = json.dumps(order_body("F-1")).encode()
    route, sent = call_lane(app, whole(body), {**shop.auth, **JSON})
    assert route.bodies == []
    assert sent[0]["status"] == 200
    assert sent[1]["body"] == b'{"statusCode":200}'
    assert count_orders(session) == 1


def test_a_body_sent_in_several_parts_is_read_whole(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    body = json.dumps(order_body("F-2")).encode()
    route, sent = call_lane(app, in_chunks(body, 50), {**shop.auth, **JSON})
    assert route.bodies == []
    assert sent[0]["status"] == 200
    assert count_orders(session) == 1


def _refused_body() -> bytes:
    return json.dumps(order_body("F-3", orderPrice=2400)).encode()  # a number: refused


@pytest.mark.parametrize(
    ("case", "headers", "query", "body"),
    [
        ("no token", JSON, b"", None),
        ("legacy query token", JSON, b"access_token=plk_at_x", None),
        ("not a bearer", {"authorization": "Basic abc", **JSON}, b"", None),
        ("not an access token", {"authorization": "Bearer plk_rt_x", **JSON}, b"", None),
        ("no content type", {}, b"", None),
        ("form content type", {"content-type": "application/x-www-form-urlencoded"}, b"", None),
        ("refused by the model", JSON, b"", _refused_body()),
        ("only Python's json reads it", JSON, b"", b"\xef\xbb\xbf" + b"{}"),
        ("not JSON", JSON, b"", b"{nope"),
    ],
)
def test_everything_else_reaches_the_route_with_its_body_untouched(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    case: str,
    headers: dict[str, str],
    query: bytes,
    body: bytes | None,
) -> None:
    body = body if body is not None else json.dumps(order_body("F-4")).encode()
    if "authorization" not in headers and case != "no token":
        headers = {**shop.auth, **headers}
    route, sent = call_lane(app, in_chunks(body, 40), headers, query)
    assert route.bodies == [body], case
    assert sent[0]["status"] == 599
    assert count_orders(session) == 0


def test_a_client_gone_mid_body_reaches_the_route_as_it_went(
    app: FastAPI, shop: ConnectedStoreFixture
) -> None:
    first = {"type": "http.request", "body": b'{"orderId":', "more_body": True}
    route, _sent = call_lane(app, [first, {"type": "http.disconnect"}], {**shop.auth, **JSON})
    assert route.messages == [first, {"type": "http.disconnect"}]


# The routed requests here send the legacy ?access_token=, whose answers also announce its
# deprecation (tests/test_versioning.py), and `RateLimit` counts down from one request to the
# next (its policy is compared); everything else must match.
_NOT_COMPARED = {"date", "server", "deprecation", "sunset", "link", "ratelimit"}


def _answer(response: Any) -> tuple[int, bytes, dict[str, str]]:
    headers = {k: v for k, v in response.headers.items() if k not in _NOT_COMPARED}
    return response.status_code, response.content, headers


def test_the_lane_answers_as_the_route_does(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    fast = client.post(
        "/v1/orders", content=json.dumps(order_body("F-5")), headers={**shop.auth, **JSON}
    )
    routed = client.post(
        f"/v1/orders?access_token={shop.access_token}",
        content=json.dumps(order_body("F-6")),
        headers=JSON,
    )
    assert _answer(fast) == _answer(routed)
    assert fast.status_code == 200
    assert count_orders(session) == 2


def test_an_unknown_token_is_refused_alike(client: TestClient, session: Session) -> None:
    unknown = "plk_at_" + "x" * 40
    body = json.dumps(order_body("F-7"))
    fast = client.post(
        "/v1/orders", content=body, headers={"Authorization": f"Bearer {unknown}", **JSON}
    )
    routed = client.post(f"/v1/orders?access_token={unknown}", content=body, headers=JSON)
    assert _answer(fast) == _answer(routed)
    assert fast.status_code == 403
    assert fast.json()["code"] == "invalid_token"
    assert count_orders(session) == 0


def _counted(client: TestClient) -> float:
    """POST /v1/orders answered 200, as /metrics counts them (per process, so: a delta)."""
    line = 'partnerlink_http_requests_total{method="POST",route="/v1/orders",status="200"}'
    rows = [row for row in client.get("/metrics").text.splitlines() if row.startswith(line)]
    return float(rows[0].split()[-1]) if rows else 0.0


def test_metrics_count_both_lanes_under_the_full_route(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    before = _counted(client)
    body = json.dumps(order_body("F-8"))
    client.post("/v1/orders", content=body, headers={**shop.auth, **JSON})
    client.post(f"/v1/orders?access_token={shop.access_token}", content=body, headers=JSON)
    assert _counted(client) - before == 2
