"""An e-receipt needs a usable phone (CONTRACT.md §6): a phone that does not parse counts as
none, on every path an order takes (the fast lane, the route, a batch, order by order)."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.db.raw import Sql
from partnerlink.orders.intake.pipeline import Pipeline
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.service import OrderPost, StoredOrder, accept_orders
from partnerlink.receipts.tasks import send_due_receipts
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import PHONE, order_body, orders, post, receipts
from tests.orders.test_fast_lane import JSON, call_lane, whole

UNUSABLE = ["not a number", "12", "+1 000", "☎"]


def unusable_orders() -> list[dict[str, Any]]:
    return [
        order_body(f"U-{n}", customerPhoneNumber=phone, customerEmail=None)
        for n, phone in enumerate(UNUSABLE)
    ]


def assert_no_receipt_but_orders_stored(session: Session, count: int) -> None:
    assert receipts(session) == []
    stored = orders(session)
    assert len(stored) == count
    # The order keeps the phone as sent; only the receipt rule reads it as absent.
    assert {order.customer_phone_number for order in stored} <= {*UNUSABLE, PHONE}


def test_fast_lane_queues_no_receipt_for_an_unusable_phone(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture
) -> None:
    for body in unusable_orders():
        route, sent = call_lane(app, whole(json.dumps(body).encode()), {**shop.auth, **JSON})
        assert route.bodies == [] and sent[0]["status"] == 200  # taken by the lane itself
    assert_no_receipt_but_orders_stored(session, len(UNUSABLE))


def test_route_queues_no_receipt_for_an_unusable_phone(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    for body in unusable_orders():
        # The legacy ?access_token= never takes the fast lane: this is the route's path.
        answer = client.post(
            "/v1/orders",
            params={"access_token": shop.access_token},
            content=json.dumps(body),
            headers=JSON,
        )
        assert answer.status_code == 200, answer.text
    assert_no_receipt_but_orders_stored(session, len(UNUSABLE))


def run_together(app: FastAPI, token: str, bodies: list[dict[str, Any]], handler: Any) -> Any:
    async def main() -> list[object]:
        pipeline = Pipeline(app.state.engine, slots=1, handler=handler)
        posts = [OrderPost(token=token, order=OrderIn.model_validate(body)) for body in bodies]
        return await asyncio.gather(*(pipeline.run(post) for post in posts), return_exceptions=True)

    return asyncio.run(main())


def refuse_batches(settings: Settings, sql: Sql, posts: list[OrderPost]) -> list[Any]:
    """accept_orders, but a batch of several fails: the pipeline runs them order by order."""
    if len(posts) > 1:
        raise RuntimeError("batch refused")
    return accept_orders(sql, posts, settings=settings)


@pytest.mark.parametrize("path", ["batch", "order by order"])
def test_pipeline_queues_no_receipt_for_an_unusable_phone_batched_or_alone(
    app: FastAPI, session: Session, shop: ConnectedStoreFixture, path: str
) -> None:
    session.close()  # SQLite: the app's one connection must be free
    settings = app.state.settings
    handler = (
        partial(accept_orders, settings=settings)
        if path == "batch"
        else partial(refuse_batches, settings)
    )
    usable = order_body("OK-1")  # in the same batch: its receipt is still queued
    results = run_together(app, shop.access_token, [*unusable_orders(), usable], handler)
    assert all(isinstance(result, StoredOrder) for result in results), results
    assert [result.receipt_queued for result in results] == [False] * len(UNUSABLE) + [True]
    [receipt] = receipts(session)
    assert receipt.to_phone == PHONE and receipt.status == "pending"


def test_no_message_is_ever_sent_for_an_unusable_phone(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, app: FastAPI
) -> None:
    for body in unusable_orders():
        assert post(client, shop.auth, body).status_code == 200
    assert send_due_receipts(app.state.sessionmaker, app.state.settings) == 0
    assert receipts(session) == []


def test_get_order_answers_404_for_an_unusable_phone(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    post(client, shop.auth, order_body("U-1", customerPhoneNumber="not a number"))
    answer = client.get("/v1/orders", params={"orderId": "U-1"}, headers=shop.auth)
    assert answer.status_code == 404
