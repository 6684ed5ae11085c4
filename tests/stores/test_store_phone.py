"""storePhoneNumber, in PUT /v1/stores and in an order's `store` snapshot: a phone number read
in the store's country and kept in E.164 (receipts print it as a tel: link), or 400."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import count_orders, order_body, stored_order

PROFILE = {"storeName": "Bistro", "storeAddress": "1 Main St", "storeCountryCode": "US"}
NOT_PHONES = ["call me", "12", "+1 555", "0000000000000000000000"]


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    return create_connected_store(session, ereceipt=True, green_invoices=True)


def _stored_phone(session: Session, store_id: str) -> str | None:
    session.expire_all()
    store = session.get(Store, store_id)
    assert store is not None
    phone = store.phone_number
    session.rollback()  # the app's requests need the (SQLite) connection
    return phone


def _post(client: TestClient, shop: ConnectedStoreFixture, body: dict[str, Any]) -> Any:
    return client.post(
        "/v1/orders",
        content=json.dumps(body),
        headers={**shop.auth, "content-type": "application/json"},
    )


@pytest.mark.parametrize("phone", NOT_PHONES)
def test_put_stores_refuses_what_is_not_a_phone_number(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, phone: str
) -> None:
    before = _stored_phone(session, shop.store.id)

    response = client.put(
        "/v1/stores", json={**PROFILE, "storePhoneNumber": phone}, headers=shop.auth
    )

    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "invalid_field"
    [error] = problem["errors"]
    assert error["field"] == "storePhoneNumber"
    assert error["message"].startswith("must be a phone number")
    assert _stored_phone(session, shop.store.id) == before


@pytest.mark.parametrize(
    ("country", "phone", "e164"),
    [
        ("US", "(217) 555-0100", "+12175550100"),
        ("US", "+1 217 555 0100", "+12175550100"),
        ("GB", "020 7946 0958", "+442079460958"),
        ("US", "+44 20 7946 0958", "+442079460958"),
    ],
)
def test_put_stores_keeps_the_number_in_e164_read_in_the_store_country(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    country: str,
    phone: str,
    e164: str,
) -> None:
    body = {**PROFILE, "storeCountryCode": country, "storePhoneNumber": phone}

    response = client.put("/v1/stores", json=body, headers=shop.auth)

    assert response.status_code == 200, response.text
    assert response.json()["store"]["phoneNumber"] == e164
    assert _stored_phone(session, shop.store.id) == e164


def test_a_refused_country_is_the_only_error_told(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    body = {**PROFILE, "storeCountryCode": "XX", "storePhoneNumber": "555 0100"}

    response = client.put("/v1/stores", json=body, headers=shop.auth)

    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == ["storeCountryCode"]


@pytest.mark.parametrize("phone", NOT_PHONES)
def test_an_order_whose_store_snapshot_has_no_phone_number_is_refused(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, phone: str
) -> None:
    response = _post(client, shop, order_body(store={**PROFILE, "storePhoneNumber": phone}))

    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "invalid_field"
    assert problem["errors"][0]["field"] == "store.storePhoneNumber"
    assert count_orders(session) == 0


def test_an_order_snapshot_keeps_the_store_phone_in_e164(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body(store={**PROFILE, "storePhoneNumber": "(217) 555-0100"})

    assert _post(client, shop, body).status_code == 200

    assert _stored_phone(session, shop.store.id) == "+12175550100"
    snapshot = stored_order(session).store_snapshot
    assert snapshot is not None and snapshot["storePhoneNumber"] == "+12175550100"
    session.rollback()
    shown = client.get("/v1/orders", params={"orderId": body["orderId"]}, headers=shop.auth)
    assert shown.json()["store"]["storePhoneNumber"] == "+12175550100"
