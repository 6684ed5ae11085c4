"""Two partners on one store (CONTRACT.md §6): orders keyed by (store, partner, orderId).

Each partner has its own order ids: the same `orderId` from another partner is
another order, which it never reads, updates or overwrites, through any lane.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import ConnectedStoreFixture, connect_another_partner
from tests.orders.builders import order_body, orders, post
from tests.orders.test_conversion import touch
from tests.orders.test_merchant_orders import merchant_auth

JSON = {"content-type": "application/json"}


@pytest.fixture
def paired(session: Session, shop: ConnectedStoreFixture) -> ConnectedStoreFixture:
    """Another partner, paired to `shop`'s store."""
    return connect_another_partner(session, shop)


def read(client: TestClient, partner: ConnectedStoreFixture, order_id: str = "A-1") -> Any:
    return client.get("/v1/orders", params={"orderId": order_id}, headers=partner.auth)


def send_single(client: TestClient, partner: ConnectedStoreFixture, body: Any) -> None:
    # A bearer token and a JSON body: the fast lane (orders/intake/fast_lane.py) takes it.
    assert post(client, partner.auth, body).status_code == 200


def send_routed(client: TestClient, partner: ConnectedStoreFixture, body: Any) -> None:
    # The legacy ?access_token= goes through the FastAPI route instead.
    answer = client.post(
        f"/v1/orders?access_token={partner.access_token}", content=json.dumps(body), headers=JSON
    )
    assert answer.status_code == 200, answer.text


def send_batch(client: TestClient, partner: ConnectedStoreFixture, body: Any) -> None:
    answer = client.post("/v1/orders/batch", headers=partner.auth, json={"orders": [body]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"] == [{"orderId": body["orderId"], "status": 200}]


@pytest.mark.parametrize("send", [send_single, send_routed, send_batch])
def test_the_same_order_id_from_two_partners_is_two_orders(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    paired: ConnectedStoreFixture,
    send: Any,
) -> None:
    send(client, shop, order_body("A-1", orderPrice="2400", customerFirstName="Ada"))
    send(
        client,
        paired,
        order_body(
            "A-1",
            orderPrice="990",
            customerFirstName="Bob",
            customerEmail="bob@example.com",
            customerPhoneNumber="+14155550199",
        ),
    )

    own, theirs = read(client, shop), read(client, paired)

    assert own.status_code == theirs.status_code == 200
    assert (own.json()["orderPrice"], own.json()["customerEmail"]) == ("2400", "ada@example.com")
    assert (theirs.json()["orderPrice"], theirs.json()["customerEmail"]) == (
        "990",
        "bob@example.com",
    )
    stored = {(o.partner_id, o.order_id, o.order_price) for o in orders(session)}
    assert stored == {
        (shop.partner.partner.id, "A-1", 2400),
        (paired.partner.partner.id, "A-1", 990),
    }


@pytest.mark.parametrize("send", [send_single, send_batch])
def test_a_partner_updates_only_its_own_order(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    paired: ConnectedStoreFixture,
    send: Any,
) -> None:
    send(client, shop, order_body("A-1", orderPrice="2400"))
    send(client, paired, order_body("A-1", orderPrice="990"))
    later = "2024-05-01T13:00:00.000Z"
    send(client, paired, order_body("A-1", orderPrice="1200", updatedAt=later))

    assert read(client, shop).json()["orderPrice"] == "2400"
    assert read(client, paired).json()["orderPrice"] == "1200"
    assert len(orders(session)) == 2


def test_another_partners_order_is_unknown_to_a_partner(
    client: TestClient, shop: ConnectedStoreFixture, paired: ConnectedStoreFixture
) -> None:
    send_single(client, shop, order_body("A-1"))

    answer = read(client, paired)

    assert answer.status_code == 404
    assert answer.json()["code"] == "not_found"
    assert "Ada" not in answer.text and "ada@example.com" not in answer.text


def test_another_partners_earlier_order_of_the_customer_counts_as_earlier(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    paired: ConnectedStoreFixture,
) -> None:
    # The class is the customer's in the profile, whichever partner sent the earlier order;
    # only the order itself (this partner's A-1) is left out of "earlier".
    touch(session, shop.profile.id, "2024-05-08T09:00:00Z", email="ada@example.com")
    send_single(client, shop, order_body("A-1", createdAt="2024-05-09T12:00:00Z"))
    send_single(client, paired, order_body("A-1", createdAt="2024-05-10T12:00:00Z"))

    classes = {o.partner_id: o.conversion for o in orders(session)}

    assert classes == {shop.partner.partner.id: "new", paired.partner.partner.id: "returning"}


def test_the_merchant_sees_both_partners_orders_once_each(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    paired: ConnectedStoreFixture,
) -> None:
    send_single(client, shop, order_body("A-1", orderPrice="2400"))
    send_single(client, paired, order_body("A-1", orderPrice="990"))
    send_single(client, paired, order_body("A-1", orderPrice="990"))  # a retry

    listed = client.get(
        f"/merchant/api/stores/{shop.store.id}/orders", headers=merchant_auth(session, shop)
    ).json()["orders"]

    assert sorted((o["orderId"], o["orderPrice"]) for o in listed) == [
        ("A-1", "2400"),
        ("A-1", "990"),
    ]
