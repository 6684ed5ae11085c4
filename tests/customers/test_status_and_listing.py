"""Who may read an upload's status, and the merchant's customer listing (CONTRACT.md §4)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from tests.customers.conftest import drain_worker, ingest, put_file, upload_url
from tests.factories import (
    DEFAULT_PASSWORD,
    ConnectedStoreFixture,
    connect_another_partner,
    create_connected_store,
    create_merchant_account,
    create_profile,
)


def _put(client: TestClient, connected: ConnectedStoreFixture) -> str:
    response = put_file(client, upload_url(client, connected), b'[{"email": "a@example.com"}]')
    upload_id: str = response.json()["uploadId"]
    return upload_id


def test_status_is_received_until_the_worker_runs(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    upload_id = _put(client, connected)
    status = client.get(f"/v1/customers/uploads/{upload_id}", headers=connected.auth).json()
    assert status["status"] == "received" and status["records"] == 0
    drain_worker(app, settings)
    status = client.get(f"/v1/customers/uploads/{upload_id}", headers=connected.auth).json()
    assert status["status"] == "done" and status["created"] == 1


def test_another_store_cannot_see_the_upload(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    upload_id = _put(client, connected)
    stranger = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    response = client.get(f"/v1/customers/uploads/{upload_id}", headers=stranger.auth)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_another_partner_of_the_same_store_cannot_see_the_upload(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    upload_id = _put(client, connected)
    paired = connect_another_partner(session, connected)

    theirs = client.get(f"/v1/customers/uploads/{upload_id}", headers=paired.auth)
    own = client.get(f"/v1/customers/uploads/{upload_id}", headers=connected.auth)

    assert theirs.status_code == 404
    assert theirs.json()["code"] == "not_found"
    assert own.status_code == 200


def test_unknown_upload_answers_404(client: TestClient, connected: ConnectedStoreFixture) -> None:
    for upload_id in ("00000000-0000-0000-0000-000000000000", "x", "é" * 300):
        response = client.get(f"/v1/customers/uploads/{upload_id}", headers=connected.auth)
        assert response.status_code == 404


def test_status_needs_the_access_token(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    upload_id = _put(client, connected)
    response = client.get(f"/v1/customers/uploads/{upload_id}")
    assert response.status_code == 403
    assert response.json()["code"] == "invalid_token"


def _sign_in(client: TestClient, email: str = "owner@example.com") -> dict[str, str]:
    response = client.post(
        "/merchant/api/sessions", json={"email": email, "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['sessionToken']}"}


def _listing(client: TestClient, profile_id: str, headers: dict[str, str], query: str = "") -> Any:
    return client.get(f"/merchant/api/profiles/{profile_id}/customers{query}", headers=headers)


def test_merchant_lists_the_profile_customers_newest_first(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    records = [
        {
            "email": "a@example.com",
            "phoneNumber": "+14155552671",
            "firstName": "A",
            "lastName": "Lee",
            "city": "SF",
            "countryCode": "US",
        },
        {"phoneNumber": "+14155552672"},
    ]
    ingest(client, app, settings, connected, records)
    response = _listing(client, connected.profile.id, _sign_in(client))
    assert response.status_code == 200
    body = response.json()
    assert body["total"] == 2
    assert [c["phoneNumber"] for c in body["customers"]] == ["+14155552672", "+14155552671"]
    first = body["customers"][1]
    assert set(first) == {
        "id",
        "email",
        "phoneNumber",
        "firstName",
        "lastName",
        "city",
        "countryCode",
    }
    assert first["email"] == "a@example.com" and first["countryCode"] == "US"
    assert isinstance(first["id"], str)


def test_limit_cuts_the_list_but_not_the_total(
    client: TestClient, app: FastAPI, settings: Settings, connected: ConnectedStoreFixture
) -> None:
    ingest(client, app, settings, connected, [{"email": f"c{i}@example.com"} for i in range(60)])
    headers = _sign_in(client)
    default = _listing(client, connected.profile.id, headers).json()
    assert default["total"] == 60 and len(default["customers"]) == 50
    two = _listing(client, connected.profile.id, headers, "?limit=2").json()
    assert two["total"] == 60 and [c["email"] for c in two["customers"]] == [
        "c59@example.com",
        "c58@example.com",
    ]
    assert (
        len(_listing(client, connected.profile.id, headers, "?limit=100000").json()["customers"])
        == 60
    )
    assert _listing(client, connected.profile.id, headers, "?limit=0").json()["customers"] == []


def test_bad_limit_answers_400(client: TestClient, connected: ConnectedStoreFixture) -> None:
    headers = _sign_in(client)
    for query in ("?limit=-1", "?limit=abc", "?limit=1.5"):
        response = _listing(client, connected.profile.id, headers, query)
        assert response.status_code == 400
        assert response.json()["code"] == "invalid_field"


def test_another_merchants_profile_answers_404(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    stranger = create_merchant_account(session, email="stranger@example.com")
    create_profile(session, stranger)
    response = _listing(client, connected.profile.id, _sign_in(client, "stranger@example.com"))
    assert response.status_code == 404
    assert _listing(client, "no-such-profile", _sign_in(client)).status_code == 404


def test_listing_needs_a_merchant_session(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    response = _listing(client, connected.profile.id, {})
    assert response.status_code == 401
    store_token = _listing(client, connected.profile.id, connected.auth)
    assert store_token.status_code == 401
