"""POST /v1/orders (SPEC.md endpoint 9): validation, upsert by (store, orderId), snapshot."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.stores.models import Store
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import count_orders, order_body, post, stored_order


def test_order_answers_200_with_status_code_body(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    response = post(client, shop.auth, order_body())
    assert response.status_code == 200
    assert response.json() == {"statusCode": 200}
    order = stored_order(session)
    assert order.order_price == 2400 and order.order_currency == "USD"
    assert order.order_status == "CLOSED" and order.order_type == "dine-in"
    assert order.store_id == shop.store.id and order.profile_id == shop.profile.id


def test_legacy_query_token_is_accepted(client: TestClient, shop: ConnectedStoreFixture) -> None:
    response = client.post(
        "/v1/orders", params={"access_token": shop.access_token}, json=order_body()
    )
    assert response.status_code == 200


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer plk_at_nope"}])
def test_missing_or_invalid_token_answers_403(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, headers: dict[str, str]
) -> None:
    response = client.post("/v1/orders", json=order_body(), headers=headers)
    assert response.status_code == 403
    assert response.json()["code"] == "invalid_token"
    assert count_orders(session) == 0


def test_resending_the_same_order_id_updates_the_order(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body(orderDetails={"orderStatus": "OPEN"}))
    changed = order_body(orderPrice="3100", updatedAt="2024-05-01T12:50:00Z")
    assert post(client, shop.auth, changed).status_code == 200
    order = stored_order(session)
    assert count_orders(session) == 1
    assert order.order_price == 3100 and order.order_status == "CLOSED"


def test_older_updated_at_is_acknowledged_and_not_applied(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body(orderPrice="3100", updatedAt="2024-05-01T13:00:00Z"))
    older = order_body(orderPrice="100", updatedAt="2024-05-01T12:00:00+00:00")
    response = post(client, shop.auth, older)
    assert response.status_code == 200 and response.json() == {"statusCode": 200}
    assert stored_order(session).order_price == 3100


def test_same_order_id_in_another_store_is_another_order(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    from tests.factories import create_connected_store

    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    assert post(client, shop.auth, order_body()).status_code == 200
    assert post(client, other.auth, order_body()).status_code == 200
    assert count_orders(session) == 2


def test_missing_required_fields_answer_400_naming_each(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    response = post(client, shop.auth, {"customerEmail": "ada@example.com"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "missing_field"
    assert response.headers["content-type"] == "application/problem+json"
    fields = {e["field"] for e in body["errors"]}
    assert fields == {"orderId", "orderPrice", "orderCurrency", "createdAt"}
    assert count_orders(session) == 0


WRONG_TYPES: list[tuple[dict[str, Any], str]] = [
    ({"orderPrice": 2400}, "orderPrice"),
    ({"orderId": 1001}, "orderId"),
    ({"orderCurrency": 840}, "orderCurrency"),
    ({"createdAt": 1714566600}, "createdAt"),
    ({"customerPhoneNumber": 4155550123}, "customerPhoneNumber"),
    (
        {"orderDetails": {"orderItems": [{"itemPrice": 450}]}},
        "orderDetails.orderItems[0].itemPrice",
    ),
    (
        {"orderDetails": {"orderItems": [{"itemTax": 7.2}]}},
        "orderDetails.orderItems[0].itemTax",
    ),
    (
        {"orderDetails": {"orderItems": [{"itemQuantity": "2"}]}},
        "orderDetails.orderItems[0].itemQuantity",
    ),
    (
        {"orderDetails": {"orderItems": [{"itemQuantity": True}]}},
        "orderDetails.orderItems[0].itemQuantity",
    ),
    (
        {"orderDetails": {"orderPayments": [{"paymentSum": 2400}]}},
        "orderDetails.orderPayments[0].paymentSum",
    ),
    ({"orderDetails": {"orderStatus": 1}}, "orderDetails.orderStatus"),
    ({"orderDetails": []}, "orderDetails"),
    ({"orderDetails": {"orderItems": {"itemId": "x"}}}, "orderDetails.orderItems"),
]


def test_numbers_and_wrong_types_are_refused_not_coerced(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for change, field in WRONG_TYPES:
        response = post(client, shop.auth, order_body(**change))
        assert response.status_code == 400, change
        assert response.json()["code"] == "invalid_field", change
        assert [e["field"] for e in response.json()["errors"]] == [field], change
    assert count_orders(session) == 0


def test_money_is_a_string_of_an_optional_minus_sign_and_digits(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    for money in ["24.00", "1e3", " 24", "", "+24", "24\n", "٣٤", "0x10", "-"]:
        response = post(client, shop.auth, order_body(orderPrice=money))
        assert response.status_code == 400, money
        assert response.json()["errors"][0]["field"] == "orderPrice"
    for money in ["0", "-150", "000123", "999999999999999"]:
        assert post(client, shop.auth, order_body(orderPrice=money)).status_code == 200, money


def test_money_too_large_for_a_bigint_answers_400(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    response = post(client, shop.auth, order_body(orderPrice="9" * 19))
    assert response.status_code == 400


def test_unknown_currency_answers_400(client: TestClient, shop: ConnectedStoreFixture) -> None:
    for currency in ["XYZ", "US", "dollar", "", "€"]:
        response = post(client, shop.auth, order_body(orderCurrency=currency))
        assert response.status_code == 400, currency
        assert response.json()["errors"][0]["field"] == "orderCurrency"


def test_currency_is_read_case_insensitively(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    assert post(client, shop.auth, order_body(orderCurrency="jpy")).status_code == 200
    assert stored_order(session).order_currency == "JPY"


def test_timestamps_must_be_iso8601(client: TestClient, shop: ConnectedStoreFixture) -> None:
    for value in ["yesterday", "2024-13-01T00:00:00Z", "01/05/2024", "2024-05-01T25:00"]:
        for field in ("createdAt", "updatedAt"):
            response = post(client, shop.auth, order_body(**{field: value}))
            assert response.status_code == 400, value
            assert response.json()["errors"][0]["field"] == field


def test_timestamp_without_offset_is_utc_and_offsets_are_kept(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body("naive", createdAt="2024-05-01T12:30:00"))
    post(client, shop.auth, order_body("cest", createdAt="2024-05-01T14:30:00+02:00"))
    naive, cest = stored_order(session, "naive"), stored_order(session, "cest")
    assert naive.ordered_at == cest.ordered_at
    assert naive.ordered_at.isoformat() == "2024-05-01T12:30:00+00:00"
    assert cest.ordered_at_offset_minutes == 120


def test_extra_keys_are_kept_as_given(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body()
    body["orderDetails"]["tableNumber"] = 12
    body["orderDetails"]["waiter"] = {"name": "Sam", "shift": ["lunch"]}
    body["orderDetails"]["orderItems"][0]["modifiers"] = ["oat milk", "extra shot"]
    body["orderDetails"]["orderPayments"][0]["tip"] = "200"
    post(client, shop.auth, body)
    details = stored_order(session).details
    assert details == body["orderDetails"]


def test_parking_session_is_an_ordinary_order(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    details = {
        "orderStatus": "CLOSED",
        "orderType": "parking",
        "orderItems": [
            {
                "itemId": "tariff-std",
                "itemName": "Parking",
                "itemPrice": "650",
                "itemQuantity": 1,
                "itemTax": "104",
                "plate": "B-XY 1234",
                "entryTime": "2024-05-01T08:02:00Z",
                "exitTime": "2024-05-01T10:17:00Z",
                "durationMinutes": 135,
                "tariff": "standard",
            }
        ],
        "orderPayments": [{"paymentType": "card", "paymentSum": "650", "paymentLast4": "0005"}],
    }
    body = order_body("P-77", orderPrice="650", orderDetails=details)
    assert post(client, shop.auth, body).status_code == 200
    assert stored_order(session, "P-77").details == details


def test_store_snapshot_updates_the_store_profile(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    snapshot = {
        "storeName": "Bistro Riverside",
        "storeAddress": "9 River Rd",
        "storeCountryCode": "US",
        "storeCity": "Springfield",
        "storePhoneNumber": "+12175550100",
    }
    assert post(client, shop.auth, order_body(store=snapshot)).status_code == 200
    store = session.get(Store, shop.store.id, populate_existing=True)
    assert store is not None
    assert (store.name, store.address, store.phone_number) == (
        "Bistro Riverside",
        "9 River Rd",
        "+12175550100",
    )


def test_store_snapshot_without_currency_keeps_the_stores_currency_in_a_new_country(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    snapshot = {"storeName": "Bistro Tokyo", "storeAddress": "1-1 Ginza", "storeCountryCode": "JP"}
    assert post(client, shop.auth, order_body(store=snapshot)).status_code == 200
    store = session.get(Store, shop.store.id, populate_existing=True)
    assert store is not None
    assert (store.country_code, store.currency) == ("JP", "USD")
    session.rollback()
    answer = client.get("/v1/orders", params={"orderId": "A-1001"}, headers=shop.auth)
    assert answer.json()["store"]["storeCountryCode"] == "JP"
    assert answer.json()["store"]["storeCurrency"] == "USD"


def test_invalid_store_snapshot_names_store_fields_and_stores_nothing(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body(store={"storeName": 7, "storeCountryCode": "Narnia"})
    response = post(client, shop.auth, body)
    assert response.status_code == 400
    fields = {e["field"] for e in response.json()["errors"]}
    assert {"store.storeName", "store.storeAddress", "store.storeCountryCode"} <= fields
    assert count_orders(session) == 0


def test_order_resolves_the_profiles_customer_by_normalized_email(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body("1", customerEmail="  Ada@Example.COM "))
    post(
        client,
        shop.auth,
        order_body("2", customerEmail="ada@example.com", customerPhoneNumber="(415) 555-0199"),
    )
    customers = list(session.scalars(select(Customer)))
    session.rollback()
    assert len(customers) == 1
    assert customers[0].email == "ada@example.com"
    assert customers[0].phone_number == "+14155550199"  # read in the store's country, US
    assert (
        stored_order(session, "1").customer_id
        == customers[0].id
        == stored_order(session, "2").customer_id
    )


def test_order_without_email_or_phone_has_no_customer(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body(customerEmail="not-an-email", customerPhoneNumber="12")
    assert post(client, shop.auth, body).status_code == 200
    assert stored_order(session).customer_id is None
    assert session.scalar(select(Customer.id)) is None


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


ODD_BODIES: list[Any] = [
    [],
    [order_body()],
    "order",
    None,
    17,
    {"orderId": {"$gt": ""}},
    {"orderId": ["A"], "orderPrice": ["1"]},
    order_body(orderId="x" * 201),
    order_body(orderId="nul\u0000id"),
    order_body(customerFirstName="\ud800"),
    order_body(orderDetails={"orderStatus": "CLOSED", "note": "bad \ud800 text"}),
    order_body(orderDetails={"orderStatus": "CLOSED", "nested": {"k\u0000": "v"}}),
    order_body(orderPrice="1" * 5000),
    order_body(createdAt="9999-12-31T23:59:59-23:59"),
    order_body(createdAt="0001-01-01T00:00:00+01:00"),
    order_body(orderDetails={"orderItems": [{"itemQuantity": 10**30}]}),
    order_body(orderDetails={"orderItems": [None]}),
    order_body(store=[]),
    order_body(orderDetails={"orderStatus": "CLOSED", "ratio": float("nan")}),
    order_body(orderDetails={"deep": _nested(40)}),
]


def test_odd_bodies_answer_400_never_500(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for body in ODD_BODIES:
        response = post(client, shop.auth, body)
        assert response.status_code == 400, (str(body)[:200], response.text)
        assert response.json()["code"] in ("invalid_field", "missing_field")
    assert count_orders(session) == 0


def test_malformed_json_answers_400(client: TestClient, shop: ConnectedStoreFixture) -> None:
    for raw in [
        b"{",
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"orderId": "A", "orderId": 1}',
    ]:
        response = client.post(
            "/v1/orders", content=raw, headers={**shop.auth, "content-type": "application/json"}
        )
        assert response.status_code == 400, raw[:20]


def test_odd_but_valid_unicode_is_stored(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body("注文-①", customerFirstName="Zoë 🍕", orderDetails={"note": "مرحبا"})
    assert post(client, shop.auth, body).status_code == 200
    assert stored_order(session, "注文-①").customer_first_name == "Zoë 🍕"
