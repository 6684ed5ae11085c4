"""Connections of a store: listing, revoking, and who may do either."""

from __future__ import annotations

from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.service import open_connection
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import find_refreshable_connection, issue_access_token
from tests.factories import ConnectedStoreFixture, create_connected_store, create_partner
from tests.merchant.helpers import OTHER, sign_in
from tests.stores.test_put_store import FULL_PROFILE

API = "/merchant/api"


def connections_of(client: TestClient, headers: dict[str, str], store_id: str) -> list[dict]:
    response = client.get(f"{API}/stores/{store_id}/connections", headers=headers)
    assert response.status_code == 200, response.text
    connections: list[dict] = response.json()["connections"]
    return connections


def pair_second_partner(session: Session, connected: ConnectedStoreFixture) -> tuple[str, str]:
    """Connects a second partner to the same store by pairing; answers (connection id, token)."""
    partner = create_partner(session, name="Table Booker", pos_type="table-booker")
    connection = open_connection(
        session,
        store_id=connected.store.id,
        partner_id=partner.partner.id,
        method="pairing",
        pos_type="table-booker",
    )
    token, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    session.commit()
    return connection.id, token


def test_connections_are_listed_newest_first(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    paired_id, _ = pair_second_partner(session, connected)

    listed = connections_of(client, sign_in(client), connected.store.id)

    assert listed[0]["id"] == paired_id
    assert [(c["posType"], c["method"]) for c in listed] == [
        ("table-booker", "pairing"),
        ("acme-pos", "consent"),
    ]
    for connection in listed:
        assert set(connection) == {"id", "posType", "method", "createdAt", "revokedAt"}
        assert datetime.fromisoformat(connection["createdAt"]).utcoffset() is not None
        assert connection["revokedAt"] is None
    assert datetime.fromisoformat(listed[0]["createdAt"]) >= datetime.fromisoformat(
        listed[1]["createdAt"]
    )


def test_store_without_connections_lists_none(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    session.query(Connection).delete()
    session.commit()

    assert connections_of(client, sign_in(client), connected.store.id) == []


def test_revoking_stops_the_access_token_on_the_next_request(
    client: TestClient, session: Session
) -> None:
    connected = create_connected_store(session)
    headers = sign_in(client)
    assert client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth).status_code == 200
    connection_id = connections_of(client, headers, connected.store.id)[0]["id"]

    response = client.delete(f"{API}/connections/{connection_id}", headers=headers)

    assert response.status_code == 204
    assert response.content == b""
    after = client.put("/v1/stores", json=FULL_PROFILE, headers=connected.auth)
    assert after.status_code == 403
    assert after.json()["code"] == "invalid_token"
    assert client.get("/v1/stores", headers=connected.auth).status_code == 403
    listed = connections_of(client, headers, connected.store.id)
    assert listed[0]["revokedAt"] is not None
    assert datetime.fromisoformat(listed[0]["revokedAt"]).utcoffset() is not None


def test_revoking_kills_the_refresh_token_too(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    headers = sign_in(client)
    connection_id = connections_of(client, headers, connected.store.id)[0]["id"]

    client.delete(f"{API}/connections/{connection_id}", headers=headers)

    session.expire_all()
    refreshable = find_refreshable_connection(
        session, refresh_token=connected.refresh_token, partner_id=connected.partner.partner.id
    )
    assert refreshable is None


def test_revoking_one_connection_leaves_the_others(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    _, paired_token = pair_second_partner(session, connected)
    headers = sign_in(client)
    consent_id = connections_of(client, headers, connected.store.id)[1]["id"]

    client.delete(f"{API}/connections/{consent_id}", headers=headers)

    paired = {"Authorization": f"Bearer {paired_token}"}
    assert client.get("/v1/stores", headers=paired).status_code == 200
    assert client.get("/v1/stores", headers=connected.auth).status_code == 403


def test_revoking_twice_answers_204_and_keeps_the_first_time(
    client: TestClient, session: Session
) -> None:
    connected = create_connected_store(session)
    headers = sign_in(client)
    connection_id = connections_of(client, headers, connected.store.id)[0]["id"]
    client.delete(f"{API}/connections/{connection_id}", headers=headers)
    first = connections_of(client, headers, connected.store.id)[0]["revokedAt"]

    again = client.delete(f"{API}/connections/{connection_id}", headers=headers)

    assert again.status_code == 204
    assert connections_of(client, headers, connected.store.id)[0]["revokedAt"] == first


def test_another_merchant_can_neither_see_nor_revoke(client: TestClient, session: Session) -> None:
    owner = create_connected_store(session)
    create_connected_store(session, email=OTHER, pos_type="other-pos")
    owner_headers = sign_in(client)
    intruder = sign_in(client, OTHER)
    connection_id = connections_of(client, owner_headers, owner.store.id)[0]["id"]

    listed = client.get(f"{API}/stores/{owner.store.id}/connections", headers=intruder)
    revoked = client.delete(f"{API}/connections/{connection_id}", headers=intruder)

    assert listed.status_code == 404
    assert revoked.status_code == 404
    assert revoked.json()["code"] == "not_found"
    assert client.get("/v1/stores", headers=owner.auth).status_code == 200


@pytest.mark.parametrize("odd_id", ["no-such-id", "%00", "y" * 300, "%ED%A0%80"])
def test_unknown_or_odd_connection_ids_answer_404(
    client: TestClient, session: Session, odd_id: str
) -> None:
    create_connected_store(session)
    headers = sign_in(client)

    assert client.delete(f"{API}/connections/{odd_id}", headers=headers).status_code == 404
    assert client.get(f"{API}/stores/{odd_id}/connections", headers=headers).status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/profiles"),
        ("POST", "/profiles"),
        ("POST", "/profiles/x/stores"),
        ("PATCH", "/stores/x"),
        ("GET", "/stores/x/connections"),
        ("DELETE", "/connections/x"),
    ],
)
def test_every_merchant_call_needs_a_session(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, f"{API}{path}", json={})

    assert response.status_code == 401
    assert response.json()["code"] == "not_signed_in"
