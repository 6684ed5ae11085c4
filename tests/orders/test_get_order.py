"""GET /v1/orders?orderId= (SPEC.md endpoint 10), gated like the receipt page (CONTRACT.md §6)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, post, with_status


def get(client: TestClient, shop: ConnectedStoreFixture, order_id: str = "A-1001"):  # type: ignore[no-untyped-def]
    return client.get("/v1/orders", params={"orderId": order_id}, headers=shop.auth)


def test_closed_order_with_phone_answers_in_request_field_names(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    body = order_body(
        createdAt="2024-05-01T14:30:00+02:00",
        store={
            "storeName": "Bistro Central",
            "storeAddress": "1 Main St",
            "storeCountryCode": "US",
        },
    )
    post(client, shop.auth, body)
    response = get(client, shop)
    assert response.status_code == 200
    got = response.json()
    for field in (
        "orderId",
        "orderPrice",
        "orderCurrency",
        "customerFirstName",
        "customerLastName",
        "customerEmail",
        "customerPhoneNumber",
    ):
        assert got[field] == body[field], field
    assert got["createdAt"] == "2024-05-01T14:30:00+02:00"
    assert got["updatedAt"] == "2024-05-01T12:41:00+00:00"
    assert got["orderStatus"] == "CLOSED" and got["orderType"] == "dine-in"
    assert got["orderItems"] == body["orderDetails"]["orderItems"]
    assert got["orderPayments"] == body["orderDetails"]["orderPayments"]
    assert got["store"]["storeName"] == "Bistro Central"
    assert got["store"]["storeCountryCode"] == "US"


def test_receipts_off_answers_403_receipts_disabled(client: TestClient, session: Session) -> None:
    shop = create_connected_store(session, green_invoices=False)
    post(client, shop.auth, order_body())
    response = get(client, shop)
    assert response.status_code == 403
    assert response.json()["code"] == "receipts_disabled"


def test_gate_is_checked_when_the_order_is_read(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body())
    session.execute(update(Store).values(green_invoices=False))
    session.commit()
    assert get(client, shop).status_code == 403


def test_unknown_open_or_phoneless_orders_answer_404(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    post(client, shop.auth, with_status(order_body("open"), "OPEN"))
    post(client, shop.auth, order_body("no-phone", customerPhoneNumber=None))
    post(client, shop.auth, order_body("bad-phone", customerPhoneNumber="12"))
    post(client, shop.auth, order_body("no-details", orderDetails=None))
    for order_id in ("unknown", "open", "no-phone", "bad-phone", "no-details"):
        response = get(client, shop, order_id)
        assert response.status_code == 404, order_id
        assert response.json()["code"] == "not_found"


def test_another_stores_order_is_not_visible(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    other = create_connected_store(
        session, email="other@example.com", pos_type="other-pos", green_invoices=True
    )
    post(client, other.auth, order_body())
    assert get(client, shop).status_code == 404


def test_missing_order_id_answers_400_and_missing_token_403(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    response = client.get("/v1/orders", headers=shop.auth)
    assert response.status_code == 400
    assert response.json()["code"] == "missing_field"
    assert client.get("/v1/orders", params={"orderId": "A-1001"}).status_code == 403
