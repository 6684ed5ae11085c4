"""The merchant JSON API of the consent screen (CONTRACT.md §4), and the whole flow through it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect.models import IntegrationToken
from partnerlink.connect.oauth_flow import AuthorizationRequest, start_authorization
from partnerlink.stores.models import Store
from tests.connect.conftest import (
    World,
    assert_problem,
    build_world,
    fetch_one,
    merchant_headers,
    new_integration_token,
)
from tests.factories import DEFAULT_PASSWORD, create_merchant_account, create_profile

CONSENTS = "/merchant/api/consents"


@pytest.fixture
def headers(session: Session, world: World) -> dict[str, str]:
    return merchant_headers(session, world.merchant)


def test_full_consent_flow_through_the_merchant_api(client: TestClient, session: Session) -> None:
    world = build_world(session, ereceipt=True)
    signed_in = client.post(
        "/merchant/api/sessions",
        json={"email": world.merchant.email, "password": DEFAULT_PASSWORD},
    )
    assert signed_in.status_code == 200, signed_in.text
    headers = {"Authorization": f"Bearer {signed_in.json()['sessionToken']}"}
    token = new_integration_token(client, world.partner)
    status_params = {**world.creds, "integration_token": token}

    shown = client.get(
        f"{CONSENTS}/{token}", params={"client_id": world.partner.client_id}, headers=headers
    )
    assert shown.status_code == 200, shown.text
    assert shown.json()["partner"] == {
        "name": "Acme POS",
        "posType": "acme-pos",
        "ereceiptOffered": True,
    }

    approved = client.post(
        f"{CONSENTS}/{token}/approve",
        json={
            "clientId": world.partner.client_id,
            "profileId": world.profile.id,
            "greenInvoices": True,
        },
        headers=headers,
    )
    assert approved.status_code == 200, approved.text
    store_id = approved.json()["storeId"]
    assert approved.json() == {"status": "finished", "storeId": store_id}
    assert client.get("/v1/auth/integration", params=status_params).json()["status"] == "finished"

    tokens = client.get("/v1/auth/integration/token", params=status_params).json()
    assert tokens["ereceipt"] is True and tokens["success"] is True
    auth = {"Authorization": f"Bearer {tokens['accessToken']}"}
    assert client.get("/v1/stores", headers=auth).json() == {"greenInvoices": True}
    put = client.put(
        "/v1/stores",
        json={"storeName": "Bistro by Acme", "storeAddress": "2 Side St", "storeCountryCode": "US"},
        headers=auth,
    )
    assert put.status_code == 200 and put.json()["store"]["id"] == store_id

    refreshed = client.post(
        "/v1/auth/token",
        params={**world.creds, "code": tokens["refreshToken"], "grant_type": "refresh_token"},
    )
    assert refreshed.status_code == 200
    profiles = client.get(
        f"{CONSENTS}/{token}", params={"client_id": world.partner.client_id}, headers=headers
    ).json()["profiles"]
    stores = {s["id"]: s for s in profiles[0]["stores"]}
    assert stores[store_id]["posType"] == "acme-pos"
    assert stores[store_id]["greenInvoices"] is True and stores[store_id]["manual"] is False


def test_read_consent_shows_status_and_the_merchants_profiles(
    client: TestClient, session: Session, world: World, headers: dict[str, str]
) -> None:
    create_profile(session, world.merchant, name="Second Business")
    stranger = create_merchant_account(session, email="stranger@example.com")
    create_profile(session, stranger, name="Not Mine")
    token = new_integration_token(client, world.partner)
    response = client.get(
        f"{CONSENTS}/{token}", params={"client_id": world.partner.client_id}, headers=headers
    )
    body = response.json()
    assert set(body) == {"partner", "status", "profiles"}
    assert body["status"] == "pending"
    assert body["partner"]["ereceiptOffered"] is False
    assert [p["name"] for p in body["profiles"]] == ["Bistro Group", "Second Business"]
    first = body["profiles"][0]
    assert set(first) == {"id", "name", "stores"} and first["id"] == world.profile.id
    assert first["stores"] == [
        {
            "id": world.store.id,
            "name": "Bistro Central",
            "address": "1 Main St",
            "city": "Springfield",
            "countryCode": "US",
            "currency": "USD",
            "posType": None,
            "greenInvoices": False,
            "manual": True,
        }
    ]


def test_consent_api_needs_a_signed_in_merchant(client: TestClient, world: World) -> None:
    token = new_integration_token(client, world.partner)
    calls = [
        client.get(f"{CONSENTS}/{token}", params={"client_id": world.partner.client_id}),
        client.post(f"{CONSENTS}/{token}/approve", json={"clientId": world.partner.client_id}),
        client.post(
            f"{CONSENTS}/{token}/decline",
            json={"clientId": world.partner.client_id},
            headers={"Authorization": "Bearer plk_ms_forged"},
        ),
    ]
    for response in calls:
        assert_problem(response, 401, "not_signed_in")


def test_read_consent_with_unknown_client_or_token_answers_404(
    client: TestClient, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    unknown_client = client.get(
        f"{CONSENTS}/{token}", params={"client_id": "plk_ci_none"}, headers=headers
    )
    assert_problem(unknown_client, 404, "unknown_client")
    unknown_token = client.get(
        f"{CONSENTS}/plk_it_none", params={"client_id": world.partner.client_id}, headers=headers
    )
    assert_problem(unknown_token, 404, "unknown_integration_token")


def test_read_consent_without_client_id_answers_400(
    client: TestClient, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    assert_problem(client.get(f"{CONSENTS}/{token}", headers=headers), 400, "missing_field")


def test_approve_with_a_store(
    client: TestClient, session: Session, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    response = client.post(
        f"{CONSENTS}/{token}/approve",
        json={"clientId": world.partner.client_id, "storeId": world.store.id},
        headers=headers,
    )
    assert response.json() == {"status": "finished", "storeId": world.store.id}
    row = fetch_one(session, select(IntegrationToken))
    assert (row.merchant_id, row.store_id) == (world.merchant.id, world.store.id)


def test_approving_a_store_that_was_not_added_by_hand_answers_400_and_stores_nothing(
    client: TestClient, session: Session, world: World, headers: dict[str, str]
) -> None:
    first = new_integration_token(client, world.partner)
    body = {"clientId": world.partner.client_id, "profileId": world.profile.id}
    created = client.post(f"{CONSENTS}/{first}/approve", json=body, headers=headers).json()
    consent_store = fetch_one(session, select(Store).where(Store.id == created["storeId"]))
    assert consent_store.manual is False
    session.rollback()
    second = new_integration_token(client, world.partner)
    response = client.post(
        f"{CONSENTS}/{second}/approve",
        json={
            "clientId": world.partner.client_id,
            "storeId": created["storeId"],
            "greenInvoices": True,
        },
        headers=headers,
    )
    assert_problem(response, 400, "invalid_field")
    assert [e["field"] for e in response.json()["errors"]] == ["storeId"]
    rows = session.scalars(select(IntegrationToken).order_by(IntegrationToken.created_at)).all()
    assert [row.status for row in rows] == ["finished", "pending"]
    assert rows[1].store_id is None and rows[1].merchant_id is None
    session.rollback()


def test_an_oauth_consent_is_refused_here_and_nothing_is_stored(
    client: TestClient, session: Session, world: World, headers: dict[str, str]
) -> None:
    """An OAuth authorize page's consent gets its code only from that page's approval;
    approved here, no code would ever be issued and its new store would be nobody's."""
    asked = AuthorizationRequest("https://pos.example.com/oauth/callback", "st", "c" * 43)
    token = start_authorization(
        session, partner=world.partner.partner, request=asked, ttl_seconds=3600
    )
    session.commit()
    stores = set(session.scalars(select(Store.id)))
    choices = ({"profileId": world.profile.id}, {"storeId": world.store.id})
    session.rollback()  # SQLite's one connection goes back to the app
    for choice in choices:
        body = {"clientId": world.partner.client_id, "greenInvoices": True, **choice}
        response = client.post(f"{CONSENTS}/{token}/approve", json=body, headers=headers)
        assert_problem(response, 400, "invalid_field")
        assert [e["field"] for e in response.json()["errors"]] == ["integrationToken"]
    session.rollback()
    row = fetch_one(session, select(IntegrationToken))
    assert (row.status, row.store_id, row.merchant_id) == ("pending", None, None)
    assert set(session.scalars(select(Store.id))) == stores
    session.rollback()


def test_second_approval_answers_410(
    client: TestClient, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    body = {"clientId": world.partner.client_id, "storeId": world.store.id}
    assert client.post(f"{CONSENTS}/{token}/approve", json=body, headers=headers).is_success
    again = client.post(f"{CONSENTS}/{token}/approve", json=body, headers=headers)
    assert_problem(again, 410, "integration_token_gone")


@pytest.mark.parametrize(
    ("extra", "code"),
    [({}, "missing_field"), ({"profileId": "P", "storeId": "S"}, "invalid_field")],
)
def test_approve_needs_exactly_one_choice(
    client: TestClient, world: World, headers: dict[str, str], extra: dict[str, str], code: str
) -> None:
    token = new_integration_token(client, world.partner)
    body = {"clientId": world.partner.client_id, **extra}
    response = client.post(f"{CONSENTS}/{token}/approve", json=body, headers=headers)
    assert_problem(response, 400, code)


def test_approving_another_merchants_store_answers_404(
    client: TestClient, session: Session, world: World
) -> None:
    stranger = create_merchant_account(session, email="stranger@example.com")
    token = new_integration_token(client, world.partner)
    response = client.post(
        f"{CONSENTS}/{token}/approve",
        json={"clientId": world.partner.client_id, "storeId": world.store.id},
        headers=merchant_headers(session, stranger),
    )
    assert_problem(response, 404, "not_found")
    assert fetch_one(session, select(IntegrationToken)).status == "pending"


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        None,
        {"clientId": 12},
        {"clientId": None, "storeId": "x"},
        {"clientId": ["a"], "profileId": "x"},
        {"clientId": "c", "storeId": {"id": 1}},
        {"clientId": "c", "storeId": "x", "greenInvoices": "perhaps"},
        {"clientId": "c\u0000", "storeId": "x"},
        {"clientId": "c" * 10_000, "storeId": "x"},
        {"clientId": "c", "storeId": 10**40},
    ],
)
def test_odd_approve_bodies_answer_400(
    client: TestClient, world: World, headers: dict[str, str], body: Any
) -> None:
    token = new_integration_token(client, world.partner)
    response = client.post(f"{CONSENTS}/{token}/approve", json=body, headers=headers)
    assert response.status_code == 400, response.text


def test_odd_but_well_formed_ids_answer_404(
    client: TestClient, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    for store_id in ("ünïcødé-☃", "1' OR '1'='1", "x" * 200):
        response = client.post(
            f"{CONSENTS}/{token}/approve",
            json={"clientId": world.partner.client_id, "storeId": store_id},
            headers=headers,
        )
        assert_problem(response, 404, "not_found")
    for token_value in ("\u2603", "%00", "x" * 2000):
        response = client.get(
            f"{CONSENTS}/{token_value}",
            params={"client_id": world.partner.client_id},
            headers=headers,
        )
        assert response.status_code == 404


def test_decline_then_partner_sees_cancelled(
    client: TestClient, session: Session, world: World, headers: dict[str, str]
) -> None:
    token = new_integration_token(client, world.partner)
    body = {"clientId": world.partner.client_id}
    response = client.post(f"{CONSENTS}/{token}/decline", json=body, headers=headers)
    assert response.json() == {"status": "cancelled"}
    params = {**world.creds, "integration_token": token}
    assert client.get("/v1/auth/integration", params=params).json()["status"] == "cancelled"
    exchange = client.get("/v1/auth/integration/token", params=params)
    assert_problem(exchange, 400, "not_finished")
    again = client.post(f"{CONSENTS}/{token}/decline", json=body, headers=headers)
    assert_problem(again, 410, "integration_token_gone")
    assert fetch_one(session, select(Store)).pos_type is None
