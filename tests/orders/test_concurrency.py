"""Concurrent posts against a real server: one order, at most one SMS, no 500s."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.orders.models import Order
from partnerlink.receipts.models import Receipt
from tests.conftest import ON_POSTGRES, LiveServer
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body

pytestmark = pytest.mark.slow

CLIENTS = 200
RETRYABLE = {500}  # `unavailable`, with Retry-After


@pytest.fixture
def server(live_env: dict[str, str]) -> Iterator[LiveServer]:
    # Several server processes on PostgreSQL (its default), the one writer on SQLite.
    live = LiveServer(
        {**live_env, "PARTNERLINK_WORKER_POLL_SECONDS": "0.1"}, workers=2 if ON_POSTGRES else 1
    )
    live.start()
    try:
        yield live
    finally:
        live.stop()


def post_all(
    server: LiveServer, shop: ConnectedStoreFixture, bodies: list[dict[str, Any]]
) -> Counter[int]:
    barrier = threading.Barrier(len(bodies))
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    with httpx.Client(base_url=server.url, headers=shop.auth, timeout=60, limits=limits) as client:

        def send(body: dict[str, Any]) -> int:
            barrier.wait()
            return client.post("/v1/orders", json=body).status_code

        with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
            statuses = Counter(pool.map(send, bodies))
    # Concurrent orders may be journaled and applied a moment later (orders/intake/journal.py);
    # a read applies them first, so the rows counted below are what any reader sees. On a
    # new connection: one left idle during the posts may be past the server's keep-alive.
    httpx.get(
        f"{server.url}/v1/orders",
        params={"orderId": bodies[0]["orderId"]},
        headers=shop.auth,
        timeout=60,
    )
    return statuses


def count(session: Session, model: Any) -> int:
    value = session.scalar(select(func.count()).select_from(model)) or 0
    session.rollback()
    return value


def test_200_identical_posts_store_one_order_and_send_one_sms(
    server: LiveServer, session: Session
) -> None:
    shop = create_connected_store(session, ereceipt=True, green_invoices=True)
    body = order_body(
        store={"storeName": "Bistro Central", "storeAddress": "1 Main St", "storeCountryCode": "US"}
    )
    statuses = post_all(server, shop, [body] * CLIENTS)
    assert set(statuses) <= {200} | RETRYABLE, (statuses, server.logs()[-3000:])
    assert statuses[200] >= 1
    assert count(session, Order) == 1
    assert count(session, Receipt) == 1
    assert count(session, Customer) == 1
    deadline = time.monotonic() + 120  # each look is a CLI process: seconds when busy
    while time.monotonic() < deadline:
        listed = json.loads(server.cli("sms", "list", "--json").stdout)
        if listed and listed[0]["status"] == "sent":
            break
        time.sleep(0.2)
    assert len(listed) == 1 and listed[0]["status"] == "sent"
    logs = server.logs()
    assert "Traceback" not in logs
    # The outbox logs its one message (the order and a masked number, never the link's key).
    assert logs.count("e-receipt SMS for order A-1001 to") == 1
    assert listed[0]["link"].rpartition("k=")[2] not in logs


def test_concurrent_orders_of_one_new_customer_make_one_customer(
    server: LiveServer, session: Session
) -> None:
    shop = create_connected_store(session, ereceipt=True, green_invoices=True)
    bodies = [
        order_body(f"o-{n}", customerEmail="new@example.com", customerPhoneNumber="+14155550177")
        for n in range(50)
    ]
    statuses = post_all(server, shop, bodies)
    assert set(statuses) <= {200} | RETRYABLE, (statuses, server.logs()[-3000:])
    assert count(session, Customer) == 1
    assert count(session, Order) == statuses[200]
    assert count(session, Receipt) == statuses[200]
