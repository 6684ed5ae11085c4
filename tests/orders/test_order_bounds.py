"""The bounds of an order's amounts and of its createdAt (CONTRACT §12, added 2026-11-29):
an amount of more than 15 digits, or a createdAt outside 2000-01-01 to 2999-12-31,
answers 400 `invalid_field` and stores nothing, on every way in (a single POST, the
fast lane and the route alike, a batch, the journal under load)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import count_orders, order_body, post, stored_order

BATCH = "/v1/orders/batch"
CEILING = "999999999999999"  # 10**15 - 1: the largest amount an order may carry
TOO_LARGE = ["1000000000000000", "-1000000000000000", "999999999999999999", "0" * 16]
AMOUNT_RULE = "at most 15 digits"
OUT_OF_RANGE_TIMES = [
    "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z",
    "1999-12-31T23:59:59Z",
    "3000-01-01T00:00:00Z",
    "2000-01-01T00:30:00+01:00",  # 1999-12-31 in UTC
]
EDGE_TIMES = ["2000-01-01T00:00:00Z", "2999-12-31T23:59:59.999Z", "2999-12-31T22:00:00-01:00"]


def _with_amount(field: str, amount: str) -> tuple[dict[str, Any], str]:
    """An order carrying `amount` in `field`, and where the error names it."""
    body = order_body()
    if field == "orderPrice":
        body["orderPrice"] = amount
        return body, field
    if field == "paymentSum":
        body["orderDetails"]["orderPayments"][0][field] = amount
        return body, f"orderDetails.orderPayments[0].{field}"
    body["orderDetails"]["orderItems"][1][field] = amount
    return body, f"orderDetails.orderItems[1].{field}"


def _refused(
    client: TestClient, shop: ConnectedStoreFixture, body: dict[str, Any], field: str
) -> str:
    """The message of the one error naming `field` that a single POST and a batch of the
    order both answer (400 `invalid_field`, the detail naming the field)."""
    answer = post(client, shop.auth, body)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["code"] == "invalid_field"
    assert [e["field"] for e in problem["errors"]] == [field]
    message: str = problem["errors"][0]["message"]
    assert problem["detail"].startswith(field) and message in problem["detail"]
    batch = client.post(BATCH, headers=shop.auth, json={"orders": [body]})
    assert batch.status_code == 200, batch.text
    [result] = batch.json()["results"]
    assert result["status"] == 400 and result["errors"] == problem["errors"]
    return message


@pytest.mark.parametrize("field", ["orderPrice", "itemPrice", "itemTax", "paymentSum"])
def test_an_amount_of_more_than_15_digits_answers_400_and_stores_nothing(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, field: str
) -> None:
    for amount in TOO_LARGE:
        body, where = _with_amount(field, amount)
        assert AMOUNT_RULE in _refused(client, shop, body, where), amount
    assert count_orders(session) == 0


def test_amounts_up_to_15_digits_are_stored_exactly(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for order_id, amount in (("max", CEILING), ("min", "-" + CEILING), ("padded", "0" * 15)):
        body = order_body(order_id, orderPrice=amount)
        body["orderDetails"]["orderItems"][0]["itemPrice"] = amount
        body["orderDetails"]["orderPayments"][0]["paymentSum"] = amount
        assert post(client, shop.auth, body).status_code == 200, amount
        assert stored_order(session, order_id).order_price == int(amount)
    answer = client.get("/v1/orders", params={"orderId": "max"}, headers=shop.auth)
    assert answer.json()["orderPrice"] == CEILING


def _with_time(created_at: str, order_id: str = "A-1001") -> dict[str, Any]:
    return order_body(order_id, createdAt=created_at, updatedAt=None)


@pytest.mark.parametrize("created_at", OUT_OF_RANGE_TIMES)
def test_a_created_at_outside_2000_to_2999_answers_400_and_stores_nothing(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, created_at: str
) -> None:
    message = _refused(client, shop, _with_time(created_at), "createdAt")
    assert message == "must be a time from 2000-01-01 to 2999-12-31 (UTC)"
    assert count_orders(session) == 0


def test_a_created_at_on_the_edges_is_stored(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for number, created_at in enumerate(EDGE_TIMES):
        assert post(client, shop.auth, _with_time(created_at, f"E-{number}")).status_code == 200
    assert count_orders(session) == len(EDGE_TIMES)


@pytest.fixture
def journal_client(settings: Settings) -> Iterator[TestClient]:
    """Every batch journaled, even a single order: the path taken under load."""
    with TestClient(create_app(settings.model_copy(update={"orders_journal_at": 1}))) as client:
        yield client


def test_the_journal_refuses_them_alike(
    journal_client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    large = order_body("L-1", orderPrice=TOO_LARGE[0])
    future = _with_time(OUT_OF_RANGE_TIMES[0], "F-1")
    for body in (large, future):
        assert post(journal_client, shop.auth, copy.deepcopy(body)).status_code == 400
        batch = journal_client.post(BATCH, headers=shop.auth, json={"orders": [body]})
        assert batch.json()["results"][0]["status"] == 400, batch.text
    assert post(journal_client, shop.auth, order_body("ok", orderPrice=CEILING)).status_code == 200
    assert journal_client.get("/v1/orders", params={"orderId": "ok"}, headers=shop.auth).is_success
    assert count_orders(session) == 1
