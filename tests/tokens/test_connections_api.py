"""CONTRACT.md §9: POST /v1/auth/revoke, GET /v1/auth/token/status, GET /v1/connections."""

from __future__ import annotations

from datetime import datetime

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.service import open_connection
from partnerlink.tokens.service import issue_access_token
from tests.factories import ConnectedStoreFixture, create_connected_store, create_partner
from tests.merchant.helpers import sign_in


def credentials(shop: ConnectedStoreFixture) -> dict[str, str]:
    return {"client_id": shop.partner.client_id, "client_secret": shop.partner.client_secret}


def refresh(client: TestClient, shop: ConnectedStoreFixture) -> int:
    params = credentials(shop) | {"code": shop.refresh_token, "grant_type": "refresh_token"}
    return client.post("/v1/auth/token", params=params).status_code


def data_call(client: TestClient, token: str) -> int:
    return client.get("/v1/stores", headers={"Authorization": f"Bearer {token}"}).status_code


def pair(session: Session, shop: ConnectedStoreFixture, partner_id: str) -> tuple[str, str]:
    connection = open_connection(
        session,
        store_id=shop.store.id,
        partner_id=partner_id,
        method="pairing",
        pos_type="acme-pos",
    )
    token, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    session.commit()
    return connection.id, token


def test_revoking_by_access_token_kills_access_and_refresh(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    assert data_call(client, shop.access_token) == 200

    answer = client.post("/v1/auth/revoke", params=credentials(shop) | {"token": shop.access_token})

    assert answer.status_code == 200
    assert answer.json() == {"success": True}
    assert data_call(client, shop.access_token) == 403
    assert refresh(client, shop) == 403


def test_revoking_by_refresh_token_kills_access_and_refresh(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)

    answer = client.post(
        "/v1/auth/revoke", params=credentials(shop) | {"token": shop.refresh_token}
    )

    assert answer.status_code == 200
    assert data_call(client, shop.access_token) == 403
    assert refresh(client, shop) == 403


def test_revocation_shows_as_revoked_in_the_merchant_view(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    client.post("/v1/auth/revoke", params=credentials(shop) | {"token": shop.access_token})
    listed = client.get("/v1/connections", params=credentials(shop)).json()
    assert listed == {"connections": [], "nextCursor": None}


def test_another_partners_or_unknown_token_answers_200_and_changes_nothing(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")

    for token in (other.access_token, other.refresh_token, "plk_at_unknown", "nonsense"):
        answer = client.post("/v1/auth/revoke", params=credentials(shop) | {"token": token})
        assert answer.status_code == 200
        assert answer.json() == {"success": True}

    assert data_call(client, other.access_token) == 200
    assert refresh(client, other) == 200
    assert data_call(client, shop.access_token) == 200


def test_revoke_refuses_bad_credentials_and_a_missing_token(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    wrong = credentials(shop) | {"client_secret": "plk_cs_wrong", "token": shop.access_token}

    refused = client.post("/v1/auth/revoke", params=wrong)
    missing = client.post("/v1/auth/revoke", params=credentials(shop))
    blank = client.post("/v1/auth/revoke", params=credentials(shop) | {"token": " "})

    assert refused.status_code == 403
    assert refused.json()["code"] == "invalid_credentials"
    for answer in (missing, blank):
        assert answer.status_code == 400
        assert answer.json()["code"] == "missing_field"
        assert answer.json()["errors"] == [{"field": "token", "message": "required"}]
    assert data_call(client, shop.access_token) == 200


def test_status_of_a_consent_token(client: TestClient, session: Session) -> None:
    shop = create_connected_store(session)

    answer = client.get("/v1/auth/token/status", headers=shop.auth)

    assert answer.status_code == 200
    body = answer.json()
    assert body["active"] is True
    assert body["storeId"] == shop.store.id
    assert body["posType"] == "acme-pos"
    assert body["method"] == "consent"
    assert body["expiration"].endswith("Z")
    assert datetime.fromisoformat(body["expiration"]) > datetime.fromisoformat(
        "2020-01-01T00:00:00+00:00"
    )


def test_status_of_a_pairing_token_has_no_expiration_and_takes_the_legacy_query(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    partner = create_partner(session, name="Table Booker", pos_type="table-booker")
    _, token = pair(session, shop, partner.partner.id)

    answer = client.get("/v1/auth/token/status", params={"access_token": token})

    assert answer.status_code == 200
    assert answer.json() == {
        "active": True,
        "storeId": shop.store.id,
        "posType": "table-booker",
        "method": "pairing",
        "expiration": None,
    }


def test_status_names_the_tokens_own_partner_after_another_connects_to_the_store(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    second = create_partner(session, name="Table Booker", pos_type="table-booker")
    connection = open_connection(
        session,
        store_id=shop.store.id,
        partner_id=second.partner.id,
        method="pairing",
        pos_type=second.partner.pos_type,
    )
    second_token, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    session.commit()

    first = client.get("/v1/auth/token/status", headers=shop.auth).json()
    latest = client.get("/v1/auth/token/status", params={"access_token": second_token}).json()

    assert (first["storeId"], first["posType"]) == (shop.store.id, "acme-pos")
    assert (latest["storeId"], latest["posType"]) == (shop.store.id, "table-booker")


def test_status_of_an_invalid_or_revoked_token_answers_403(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    client.post("/v1/auth/revoke", params=credentials(shop) | {"token": shop.refresh_token})

    for headers in ({}, shop.auth, {"Authorization": "Bearer plk_at_nope"}):
        answer = client.get("/v1/auth/token/status", headers=headers)
        assert answer.status_code == 403
        assert answer.json()["code"] == "invalid_token"


def test_connections_lists_only_the_partners_own_live_ones(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    # The partner also pairs with the other merchant's store.
    paired_id, _ = pair(session, other, shop.partner.partner.id)
    merchant_ids = {
        c["id"]: c
        for c in client.get(
            f"/merchant/api/stores/{other.store.id}/connections",
            headers=sign_in(client, "other@example.com"),
        ).json()["connections"]
    }

    listed = client.get("/v1/connections", params=credentials(shop))

    assert listed.status_code == 200
    connections = listed.json()["connections"]
    assert {(c["storeId"], c["method"]) for c in connections} == {
        (shop.store.id, "consent"),
        (other.store.id, "pairing"),
    }
    assert paired_id in {c["connectionId"] for c in connections}
    assert paired_id in merchant_ids
    for connection in connections:
        assert set(connection) == {"connectionId", "storeId", "method", "createdAt"}
        assert connection["createdAt"].endswith("Z")

    client.post("/v1/auth/revoke", params=credentials(shop) | {"token": shop.access_token})
    after = client.get("/v1/connections", params=credentials(shop)).json()["connections"]
    assert [c["connectionId"] for c in after] == [paired_id]

    refused = client.get("/v1/connections", params=credentials(shop) | {"client_id": "nope"})
    assert refused.status_code == 403
    assert refused.json()["code"] == "invalid_credentials"
