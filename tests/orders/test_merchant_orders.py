"""The merchant API's order listing (CONTRACT.md §4): newest first, with conversion classes."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.merchant.sessions import start_session
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, post


def merchant_auth(session: Session, shop: ConnectedStoreFixture) -> dict[str, str]:
    started = start_session(session, merchant=shop.merchant, ttl_seconds=3600)
    session.commit()
    return {"Authorization": f"Bearer {started.token}"}


def test_orders_are_listed_newest_first_with_their_class(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body("old", createdAt="2024-05-01T08:00:00Z"))
    post(
        client,
        shop.auth,
        order_body(
            "new", createdAt="2024-05-02T08:00:00Z", customerEmail=None, customerPhoneNumber=None
        ),
    )
    response = client.get(
        f"/merchant/api/stores/{shop.store.id}/orders", headers=merchant_auth(session, shop)
    )
    assert response.status_code == 200
    assert response.json() == {
        "orders": [
            {
                "orderId": "new",
                "orderPrice": "2400",
                "orderCurrency": "USD",
                "orderStatus": "CLOSED",
                "conversion": "anonymous",
                "createdAt": "2024-05-02T08:00:00+00:00",
            },
            {
                "orderId": "old",
                "orderPrice": "2400",
                "orderCurrency": "USD",
                "orderStatus": "CLOSED",
                "conversion": "organic",
                "createdAt": "2024-05-01T08:00:00+00:00",
            },
        ]
    }


def test_limit_caps_the_list(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for n in range(3):
        post(client, shop.auth, order_body(f"o{n}", createdAt=f"2024-05-0{n + 1}T08:00:00Z"))
    auth = merchant_auth(session, shop)
    url = f"/merchant/api/stores/{shop.store.id}/orders"
    got = client.get(url, params={"limit": 2}, headers=auth).json()["orders"]
    assert [o["orderId"] for o in got] == ["o2", "o1"]
    assert client.get(url, params={"limit": 0}, headers=auth).status_code == 400
    assert client.get(url, params={"limit": "many"}, headers=auth).status_code == 400


def test_another_merchants_store_answers_404_and_no_session_401(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    auth = merchant_auth(session, shop)
    assert (
        client.get(f"/merchant/api/stores/{other.store.id}/orders", headers=auth).status_code == 404
    )
    assert client.get(f"/merchant/api/stores/{shop.store.id}/orders").status_code == 401
