"""POST /v1/orders/batch (CONTRACT.md §9): each order as a single POST would be."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import ConnectedStoreFixture
from tests.orders.builders import (
    count_orders,
    order_body,
    post,
    receipts,
    stored_order,
    with_status,
)

BATCH = "/v1/orders/batch"


def test_batch_mixes_valid_and_invalid_in_request_order(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    missing_currency = order_body("B-2")
    del missing_currency["orderCurrency"]
    numeric_price = order_body("B-4", orderPrice=2400)
    orders = [
        order_body("B-1"),
        missing_currency,
        with_status(order_body("B-3"), "OPEN"),
        numeric_price,
        "not an order",
        {"orderId": 7},
    ]

    answer = client.post(BATCH, headers=shop.auth, json={"orders": orders})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["statusCode"] == 200
    results = body["results"]
    assert [(r["orderId"], r["status"]) for r in results] == [
        ("B-1", 200),
        ("B-2", 400),
        ("B-3", 200),
        ("B-4", 400),
        (None, 400),
        (None, 400),
    ]
    assert results[1]["errors"] == [{"field": "orderCurrency", "message": "required"}]
    assert {"field": "orderPrice", "message": "must be a string"} in results[3]["errors"]
    assert "errors" not in results[0]
    # Orders of one batch may be journaled and applied a moment later (orders/intake/journal.py);
    # a read applies them first, so what is counted below is what any reader sees.
    assert client.get("/v1/orders", params={"orderId": "B-1"}, headers=shop.auth).status_code == 200
    assert count_orders(session) == 2
    assert {o.order_id for o in [stored_order(session, "B-1"), stored_order(session, "B-3")]} == {
        "B-1",
        "B-3",
    }


def test_invalid_element_errors_are_those_of_a_single_post(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    bad = order_body("B-9", orderCurrency="XXX1", createdAt="yesterday")
    single = post(client, shop.auth, bad)
    batch = client.post(BATCH, headers=shop.auth, json={"orders": [bad]}).json()

    assert single.status_code == 400
    assert batch["results"][0]["errors"] == single.json()["errors"]


def test_receipt_issued_for_a_closed_order_exactly_as_a_single_post(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    answer = client.post(BATCH, headers=shop.auth, json={"orders": [order_body("R-1")]})
    assert answer.json()["results"] == [{"orderId": "R-1", "status": 200}]
    post(client, shop.auth, order_body("R-2"))

    issued = receipts(session)
    assert len(issued) == 2
    by_order = {stored_order(session, oid).id: oid for oid in ("R-1", "R-2")}
    assert sorted(by_order[r.order_pk] for r in issued) == ["R-1", "R-2"]
    batch_receipt, single_receipt = sorted(issued, key=lambda r: by_order[r.order_pk])
    assert batch_receipt.to_phone == single_receipt.to_phone
    assert batch_receipt.to_phone is not None

    # Re-sent in a batch: updated, and still one receipt for the order.
    again = client.post(
        BATCH, headers=shop.auth, json={"orders": [order_body("R-1", orderPrice="9900")]}
    )
    assert again.json()["results"] == [{"orderId": "R-1", "status": 200}]
    assert stored_order(session, "R-1").order_price == 9900
    assert len(receipts(session)) == 2
    assert count_orders(session) == 2


def test_batch_size_and_shape_are_refused_whole(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    body: object
    for body in (
        {"orders": []},
        {"orders": [order_body(f"S-{i}") for i in range(1001)]},
        {"orders": order_body("S-x")},
        {},
        [order_body("S-y")],
    ):
        answer = client.post(BATCH, headers=shop.auth, json=body)
        assert answer.status_code in (400, 413), answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["code"] in ("invalid_field", "missing_field", "payload_too_large")
    assert count_orders(session) == 0


def test_batch_of_1001_small_orders_is_400(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    tiny = [{"orderId": str(i)} for i in range(1001)]
    answer = client.post(BATCH, headers=shop.auth, json={"orders": tiny})
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["field"] == "orders"
    assert count_orders(session) == 0


def test_batch_needs_a_valid_token(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    for headers in ({}, {"Authorization": "Bearer plk_at_nope"}):
        answer = client.post(BATCH, headers=headers, json={"orders": [order_body("T-1")]})
        assert answer.status_code == 403
        assert answer.json()["code"] == "invalid_token"
    legacy = client.post(
        BATCH, params={"access_token": shop.access_token}, json={"orders": [order_body("T-2")]}
    )
    assert legacy.status_code == 200
    assert count_orders(session) == 1
