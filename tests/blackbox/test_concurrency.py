"""Retries that arrive at once: idempotency rules hold under concurrent requests."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.blackbox.box import Box, unique
from tests.blackbox.conftest import Cast

PARALLEL = 8


def _race(box: Box, request: Callable[[httpx.Client], httpx.Response]) -> list[httpx.Response]:
    barrier = threading.Barrier(PARALLEL)

    def one(_: int) -> httpx.Response:
        with httpx.Client(base_url=box.url, timeout=60) as http:
            barrier.wait()
            return request(http)

    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(one, range(PARALLEL)))


def test_same_order_sent_at_once_is_stored_once_with_one_receipt(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    box.set_green_invoices(cast.merchant, conn.store_id, True)
    order_id = unique("race")
    body = {
        "orderId": order_id,
        "orderPrice": "1500",
        "orderCurrency": "USD",
        "createdAt": "2024-05-01T12:00:00Z",
        "customerEmail": "racer@example.com",
        "customerPhoneNumber": "+15035550180",
        "orderDetails": {"orderStatus": "CLOSED"},
    }
    responses = _race(box, lambda http: http.post("/v1/orders", json=body, headers=conn.auth))
    assert Counter(r.status_code for r in responses) == {200: PARALLEL}, [
        r.text for r in responses if r.status_code != 200
    ]
    orders = box.http.get(
        f"/merchant/api/stores/{conn.store_id}/orders", headers=cast.merchant.auth
    ).json()["orders"]
    assert [o["orderId"] for o in orders] == [order_id]
    assert box.customers(cast.merchant, conn.profile_id)["total"] == 1
    box.sms_link(order_id)
    messages = box.cli_json("sms", "list", "--limit", "200")
    assert len([m for m in messages if m["orderId"] == order_id]) == 1


def test_same_pairing_code_redeemed_at_once_answers_one_200(box: Box, cast: Cast) -> None:
    profile = box.new_profile(cast.merchant)
    store = box.new_manual_store(cast.merchant, profile["id"])
    code = box.reserve_code(cast.merchant, store["id"], cast.plain.pos_type)["code"]
    responses = _race(box, lambda http: http.post("/v1/auth/integration/pair", json={"code": code}))
    assert Counter(r.status_code for r in responses) == {200: 1, 404: PARALLEL - 1}
    live = [c for c in box.connections(cast.merchant, store["id"]) if c["revokedAt"] is None]
    assert len(live) == 1


def test_same_customers_uploaded_at_once_are_created_once(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    records = [
        {"email": f"dup{i}@example.com", "phoneNumber": f"+1503555{i:04d}"} for i in range(20)
    ]
    urls = [
        box.http.get("/v1/customers", headers=conn.auth).json()["uploadUrl"]
        for _ in range(PARALLEL)
    ]
    responses = _race(box, lambda http: http.put(urls.pop(), json=records))
    assert {r.status_code for r in responses} == {200}
    for r in responses:
        assert box.wait_upload(conn, r.json()["uploadId"])["status"] == "done"
    assert box.customers(cast.merchant, conn.profile_id)["total"] == 20
