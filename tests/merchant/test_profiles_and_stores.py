"""Profiles, manually added stores and the greenInvoices switch of the merchant API."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import (
    create_connected_store,
    create_merchant_account,
    create_profile,
    create_store,
)
from tests.merchant.helpers import OTHER, sign_in

API = "/merchant/api"
STORE_KEYS = {
    "id",
    "name",
    "address",
    "city",
    "countryCode",
    "currency",
    "posType",
    "greenInvoices",
    "manual",
}


def add_store(client: TestClient, headers: dict[str, str], profile_id: str, **body: Any) -> Any:
    payload = {"name": "Harbour", "address": "2 Quay", "countryCode": "DE"} | body
    return client.post(f"{API}/profiles/{profile_id}/stores", json=payload, headers=headers)


def test_new_merchant_has_no_profiles(client: TestClient, session: Session) -> None:
    create_merchant_account(session)

    response = client.get(f"{API}/profiles", headers=sign_in(client))

    assert response.status_code == 200
    assert response.json() == {"profiles": []}


def test_profiles_list_their_stores_in_creation_order(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    second = create_store(session, connected.profile, name="Second", manual=True)
    other_profile = create_profile(session, connected.merchant, name="Other")

    response = client.get(f"{API}/profiles", headers=sign_in(client))

    profiles = response.json()["profiles"]
    assert [p["name"] for p in profiles] == ["Bistro Group", "Other"]
    assert profiles[1] == {"id": other_profile.id, "name": "Other", "stores": []}
    assert [s["id"] for s in profiles[0]["stores"]] == [connected.store.id, second.id]
    assert profiles[0]["stores"][0] == {
        "id": connected.store.id,
        "name": "Bistro Central",
        "address": "1 Main St",
        "city": "Springfield",
        "countryCode": "US",
        "currency": "USD",
        "posType": "acme-pos",
        "greenInvoices": False,
        "manual": False,
    }
    assert profiles[0]["stores"][1]["manual"] is True


def test_create_profile_answers_it_with_no_stores(client: TestClient, session: Session) -> None:
    create_merchant_account(session)
    headers = sign_in(client)

    response = client.post(f"{API}/profiles", json={"name": "  Seaside Group "}, headers=headers)

    assert response.status_code == 200
    profile = response.json()["profile"]
    assert set(profile) == {"id", "name", "stores"}
    assert (profile["name"], profile["stores"]) == ("Seaside Group", [])
    listed = client.get(f"{API}/profiles", headers=headers).json()["profiles"]
    assert [p["id"] for p in listed] == [profile["id"]]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing_field"),
        ({"name": ""}, "missing_field"),
        ({"name": "   "}, "missing_field"),
        ({"name": None}, "invalid_field"),
        ({"name": 12}, "invalid_field"),
        ({"name": ["a"]}, "invalid_field"),
        ({"name": "x" * 201}, "invalid_field"),
        ({"name": "a\u0000b"}, "invalid_field"),
    ],
)
def test_bad_profile_name_answers_400(
    client: TestClient, session: Session, body: dict[str, Any], code: str
) -> None:
    create_merchant_account(session)
    headers = sign_in(client)

    response = client.post(f"{API}/profiles", json=body, headers=headers)

    assert response.status_code == 400
    assert response.json()["code"] == code
    assert response.json()["errors"][0]["field"] == "name"
    assert client.get(f"{API}/profiles", headers=headers).json() == {"profiles": []}


def test_manual_store_is_added_to_the_profile(client: TestClient, session: Session) -> None:
    merchant = create_merchant_account(session)
    profile = create_profile(session, merchant)
    headers = sign_in(client)

    response = add_store(client, headers, profile.id, countryCode="de")

    assert response.status_code == 200
    store = response.json()["store"]
    assert set(store) == STORE_KEYS
    assert store | {"id": None} == {
        "id": None,
        "name": "Harbour",
        "address": "2 Quay",
        "city": "",
        "countryCode": "DE",
        "currency": "EUR",
        "posType": None,
        "greenInvoices": False,
        "manual": True,
    }
    listed = client.get(f"{API}/profiles", headers=headers).json()["profiles"][0]["stores"]
    assert listed == [store]


@pytest.mark.parametrize(
    ("country", "currency", "expected"),
    [("JP", None, "JPY"), ("US", "eur", "EUR"), ("GB", "", "GBP"), ("CH", "CHF", "CHF")],
)
def test_manual_store_currency_defaults_to_the_countrys(
    client: TestClient,
    session: Session,
    country: str,
    currency: str | None,
    expected: str,
) -> None:
    profile = create_profile(session, create_merchant_account(session))

    response = add_store(
        client, sign_in(client), profile.id, countryCode=country, currency=currency
    )

    assert response.json()["store"]["currency"] == expected


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"name": ""}, "name", "missing_field"),
        ({"address": "  "}, "address", "missing_field"),
        ({"countryCode": "EU"}, "countryCode", "invalid_field"),
        ({"countryCode": "XX"}, "countryCode", "invalid_field"),
        ({"currency": "XYZ"}, "currency", "invalid_field"),
        ({"name": 5}, "name", "invalid_field"),
        ({"countryCode": None}, "countryCode", "invalid_field"),
        ({"currency": 978}, "currency", "invalid_field"),
        ({"name": "x" * 301}, "name", "invalid_field"),
    ],
)
def test_bad_manual_store_answers_400_naming_the_field(
    client: TestClient, session: Session, body: dict[str, Any], field: str, code: str
) -> None:
    profile = create_profile(session, create_merchant_account(session))

    response = add_store(client, sign_in(client), profile.id, **body)

    assert response.status_code == 400, response.text
    assert response.json()["code"] == code
    assert [e["field"] for e in response.json()["errors"]] == [field]
    session.expire_all()
    assert session.query(Store).count() == 0


def test_missing_manual_store_fields_are_all_named(client: TestClient, session: Session) -> None:
    profile = create_profile(session, create_merchant_account(session))

    response = client.post(f"{API}/profiles/{profile.id}/stores", json={}, headers=sign_in(client))

    assert response.status_code == 400
    assert response.json()["code"] == "missing_field"
    assert {e["field"] for e in response.json()["errors"]} == {"name", "address", "countryCode"}


def test_green_invoices_switch_is_seen_by_the_partner(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    headers = sign_in(client)

    on = client.patch(
        f"{API}/stores/{connected.store.id}", json={"greenInvoices": True}, headers=headers
    )
    partner_view_on = client.get("/v1/stores", headers=connected.auth).json()
    off = client.patch(
        f"{API}/stores/{connected.store.id}", json={"greenInvoices": False}, headers=headers
    )

    assert on.status_code == 200
    assert set(on.json()["store"]) == STORE_KEYS
    assert on.json()["store"]["greenInvoices"] is True
    assert partner_view_on == {"greenInvoices": True}
    assert off.json()["store"]["greenInvoices"] is False
    assert client.get("/v1/stores", headers=connected.auth).json() == {"greenInvoices": False}


@pytest.mark.parametrize(
    "body", [{}, {"greenInvoices": "true"}, {"greenInvoices": 1}, {"greenInvoices": None}]
)
def test_green_invoices_must_be_a_boolean(
    client: TestClient, session: Session, body: dict[str, Any]
) -> None:
    connected = create_connected_store(session)

    response = client.patch(
        f"{API}/stores/{connected.store.id}", json=body, headers=sign_in(client)
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "greenInvoices"


def test_another_merchants_profiles_and_stores_answer_404(
    client: TestClient, session: Session
) -> None:
    owner = create_connected_store(session)
    create_merchant_account(session, email=OTHER)
    intruder = sign_in(client, OTHER)

    listed = client.get(f"{API}/profiles", headers=intruder).json()
    add = add_store(client, intruder, owner.profile.id)
    patch = client.patch(
        f"{API}/stores/{owner.store.id}", json={"greenInvoices": True}, headers=intruder
    )

    assert listed == {"profiles": []}
    assert add.status_code == 404
    assert patch.status_code == 404
    assert add.json()["code"] == patch.json()["code"] == "not_found"
    session.expire_all()
    assert session.get(Store, owner.store.id).green_invoices is False  # type: ignore[union-attr]
    assert session.query(Store).count() == 1


@pytest.mark.parametrize("odd_id", ["no-such-id", "%00", "x" * 500, "%F0%9F%8D%A3", "%ED%A0%80"])
def test_unknown_or_odd_ids_answer_404(client: TestClient, session: Session, odd_id: str) -> None:
    create_merchant_account(session)
    headers = sign_in(client)

    add = add_store(client, headers, odd_id)
    patch = client.patch(f"{API}/stores/{odd_id}", json={"greenInvoices": True}, headers=headers)

    assert add.status_code == 404
    assert patch.status_code == 404
