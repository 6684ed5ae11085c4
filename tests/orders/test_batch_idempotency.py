"""POST /v1/orders/batch with an Idempotency-Key (CONTRACT.md §13)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.idempotency.models import IdempotencyKey
from tests.factories import ConnectedStoreFixture, connect_another_partner
from tests.orders.builders import count_orders, order_body, receipts, stored_order

BATCH = "/v1/orders/batch"


def keyed(shop: ConnectedStoreFixture, key: str | bytes) -> dict[str, str | bytes]:
    return {**shop.auth, "Idempotency-Key": key}


def stored_keys(session: Session) -> int:
    n = session.scalar(select(func.count()).select_from(IdempotencyKey)) or 0
    session.rollback()
    return n


def test_a_replay_answers_the_first_answer_and_applies_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    missing_currency = order_body("K-2")
    del missing_currency["orderCurrency"]
    body = {"orders": [order_body("K-1"), missing_currency]}

    first = client.post(BATCH, headers=keyed(shop, "batch-1"), json=body)
    assert first.status_code == 200, first.text
    assert "Idempotent-Replayed" not in first.headers
    assert [(r["orderId"], r["status"]) for r in first.json()["results"]] == [
        ("K-1", 200),
        ("K-2", 400),
    ]
    assert count_orders(session) == 1 and len(receipts(session)) == 1
    session.rollback()

    # Another price under the same orderId would update the order, were it applied.
    again = client.post(BATCH, headers=keyed(shop, "batch-1"), json=body)

    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert count_orders(session) == 1 and len(receipts(session)) == 1


def test_the_same_body_serialized_anew_is_the_same_request(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    order = order_body("K-1")
    first = client.post(BATCH, headers=keyed(shop, "k"), json={"orders": [order]})
    reordered = dict(reversed(list(order.items())))
    again = client.post(BATCH, headers=keyed(shop, "k"), json={"orders": [reordered]})
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"


def test_the_key_with_another_body_answers_409_and_applies_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    client.post(BATCH, headers=keyed(shop, "k"), json={"orders": [order_body("K-1")]})

    other = client.post(
        BATCH, headers=keyed(shop, "k"), json={"orders": [order_body("K-1", orderPrice="999")]}
    )

    assert other.status_code == 409
    assert other.headers["content-type"].startswith("application/problem+json")
    assert other.json()["code"] == "idempotency_key_reused"
    assert stored_order(session, "K-1").order_price == 2400


def test_keys_are_the_connections_own(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    second = connect_another_partner(session, shop)
    body = {"orders": [order_body("K-1")]}

    mine = client.post(BATCH, headers=keyed(shop, "shared-key"), json=body)
    theirs = client.post(BATCH, headers=keyed(second, "shared-key"), json=body)

    assert mine.status_code == theirs.status_code == 200
    assert "Idempotent-Replayed" not in theirs.headers
    assert count_orders(session) == 2  # one order per partner
    assert stored_keys(session) == 2


def test_a_key_longer_than_255_or_empty_answers_400_and_stores_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    body = {"orders": [order_body("K-1")]}
    for key in ("x" * 256, "", "caf\u00e9".encode("latin-1"), "tab\tkey"):
        answer = client.post(BATCH, headers=keyed(shop, key), json=body)
        assert answer.status_code == 400, key
        assert answer.json()["code"] == "invalid_field"
        assert answer.json()["errors"][0]["field"] == "Idempotency-Key"
    assert count_orders(session) == 0 and stored_keys(session) == 0
    longest = client.post(BATCH, headers=keyed(shop, "x" * 255), json=body)
    assert longest.status_code == 200


def test_a_refused_keyed_batch_keeps_no_key_and_a_retry_runs_anew(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    body = {"orders": [order_body("K-1")]}
    refused = client.post(
        BATCH, headers={"Authorization": "Bearer plk_at_nope", "Idempotency-Key": "k"}, json=body
    )
    assert refused.status_code == 403
    assert stored_keys(session) == 0

    applied = client.post(BATCH, headers=keyed(shop, "k"), json=body)
    assert applied.status_code == 200 and "Idempotent-Replayed" not in applied.headers
    assert count_orders(session) == 1
