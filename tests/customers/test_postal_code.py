"""Customers' optional postalCode (CONTRACT §8): uploads, orders, a person's data export."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.settings import Settings
from tests.customers.conftest import ingest
from tests.factories import DEFAULT_PASSWORD, ConnectedStoreFixture
from tests.orders.builders import order_body, post


def _postal_codes(session: Session) -> list[str | None]:
    """The stored postal codes, the session's transaction ended (SQLite has one connection)."""
    session.expire_all()
    codes = list(session.scalars(select(Customer.postal_code).order_by(Customer.id)))
    session.rollback()
    return codes


def _owner(client: TestClient) -> dict[str, str]:
    response = client.post(
        "/merchant/api/sessions", json={"email": "owner@example.com", "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['sessionToken']}"}


def test_an_upload_stores_the_postal_code_trimmed_and_the_merchant_sees_it(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    listing_path = f"/merchant/api/profiles/{connected.profile.id}/customers"
    status = ingest(
        client,
        app,
        settings,
        connected,
        [
            {"email": "a@example.com", "countryCode": "US", "postalCode": " 94105-1234 "},
            {"email": "b@example.com", "postalCode": "SW1A 1AA"},
            {"email": "c@example.com"},
        ],
    )
    assert status["created"] == 3 and status["rejected"] == 0
    assert _postal_codes(session) == ["94105-1234", "SW1A 1AA", None]
    session.rollback()  # SQLite's one connection goes back to the app

    # The merchant's list keeps CONTRACT §4's fields; a person's data export shows it.
    owner = _owner(client)
    listing: Any = client.get(listing_path, headers=owner).json()
    assert all("postalCode" not in c for c in listing["customers"])
    export_path = f"{listing_path}/export"
    for email, code in (("a@example.com", "94105-1234"), ("c@example.com", None)):
        found = client.get(export_path, params={"email": email}, headers=owner)
        assert found.status_code == 200, found.text
        assert found.json()["customers"][0]["customer"]["postalCode"] == code


def test_a_postal_code_over_16_characters_rejects_the_record(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    status = ingest(
        client,
        app,
        settings,
        connected,
        [
            {"email": "a@example.com", "postalCode": "1" * 17},
            {"email": "b@example.com", "postalCode": 94105},
        ],
    )
    assert status["rejected"] == 2 and status["created"] == 0
    reasons = [error["reason"] for error in status["errors"]]
    assert "postalCode must be at most 16 characters" in reasons[0]
    assert "postalCode must be a string" in reasons[1]
    assert _postal_codes(session) == []


def test_a_later_record_without_postal_code_keeps_it_and_a_new_one_replaces_it(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    ingest(client, app, settings, connected, [{"email": "a@example.com", "postalCode": "10115"}])
    ingest(client, app, settings, connected, [{"email": "a@example.com", "firstName": "Ann"}])
    assert _postal_codes(session) == ["10115"]
    ingest(client, app, settings, connected, [{"email": "a@example.com", "postalCode": "10117"}])
    assert _postal_codes(session) == ["10117"]


def test_an_orders_customer_postal_code_goes_to_the_customer(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    response = post(client, connected.auth, order_body(customerPostalCode="  75008 "))
    assert response.status_code == 200, response.text
    assert _postal_codes(session) == ["75008"]


def test_an_orders_postal_code_over_16_characters_is_refused(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    response = post(client, connected.auth, order_body(customerPostalCode="x" * 17))
    assert response.status_code == 400
    assert {e["field"] for e in response.json()["errors"]} == {"customerPostalCode"}
    assert _postal_codes(session) == []
