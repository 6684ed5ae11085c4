"""Who may call endpoints 6 and 7, GET /v1/stores, the API reference, and odd input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from partnerlink.stores.service import open_connection
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import issue_access_token, revoke_connection
from tests.factories import create_connected_store
from tests.stores.test_put_store import FULL_PROFILE

ENDPOINTS = [("put", FULL_PROFILE), ("get", None)]


def call(client: TestClient, method: str, body: Any, **kwargs: Any) -> Any:
    if method == "put":
        return client.put("/v1/stores", json=body, **kwargs)
    return client.get("/v1/stores", **kwargs)


def assert_invalid_token(response: Any) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "invalid_token"
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(("method", "body"), ENDPOINTS)
def test_missing_token_answers_403(client: TestClient, method: str, body: Any) -> None:
    assert_invalid_token(call(client, method, body))


@pytest.mark.parametrize(("method", "body"), ENDPOINTS)
@pytest.mark.parametrize(
    "header",
    [
        "Bearer plk_at_unknown",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "plk_at_no_scheme",
        "Bearer \u00e9".encode(),
    ],
)
def test_malformed_or_unknown_token_answers_403(
    client: TestClient, session: Session, method: str, body: Any, header: str | bytes
) -> None:
    create_connected_store(session)

    assert_invalid_token(call(client, method, body, headers={"Authorization": header}))


@pytest.mark.parametrize(("method", "body"), ENDPOINTS)
def test_revoked_token_answers_403(
    client: TestClient, session: Session, method: str, body: Any
) -> None:
    connected = create_connected_store(session)
    connection = session.query(Connection).one()
    revoke_connection(session, connection, reason="merchant")
    session.commit()

    assert_invalid_token(call(client, method, body, headers=connected.auth))


@pytest.mark.parametrize(("method", "body"), ENDPOINTS)
def test_expired_token_answers_403(
    client: TestClient, session: Session, method: str, body: Any
) -> None:
    connected = create_connected_store(session)
    connection = session.query(Connection).one()
    expired, _ = issue_access_token(session, connection_id=connection.id, ttl_seconds=0)
    session.commit()

    response = call(client, method, body, headers={"Authorization": f"Bearer {expired}"})

    assert_invalid_token(response)
    assert call(client, method, body, headers=connected.auth).status_code == 200


@pytest.mark.parametrize(("method", "body"), ENDPOINTS)
def test_legacy_query_token_is_accepted(
    client: TestClient, session: Session, method: str, body: Any
) -> None:
    connected = create_connected_store(session)

    response = call(client, method, body, params={"access_token": connected.access_token})

    assert response.status_code == 200


def test_refresh_token_is_not_an_access_token(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.get(
        "/v1/stores", headers={"Authorization": f"Bearer {connected.refresh_token}"}
    )

    assert_invalid_token(response)


def test_durable_pairing_token_works(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)
    connection = open_connection(
        session,
        store_id=connected.store.id,
        partner_id=connected.partner.partner.id,
        method="pairing",
        pos_type="acme-pos",
    )
    durable, expires_at = issue_access_token(session, connection_id=connection.id, ttl_seconds=None)
    session.commit()

    response = client.put(
        "/v1/stores", json=FULL_PROFILE, headers={"Authorization": f"Bearer {durable}"}
    )

    assert expires_at is None
    assert response.status_code == 200
    # The newer connection of the same partner replaced the consent one.
    assert_invalid_token(client.get("/v1/stores", headers=connected.auth))


def test_bad_token_is_reported_before_a_bad_body(client: TestClient) -> None:
    response = client.put("/v1/stores", json={"storeName": 1})

    assert_invalid_token(response)


def test_path_without_v1_answers_403(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session)

    response = client.put("/stores", json=FULL_PROFILE, headers=connected.auth)

    assert response.status_code == 403


@pytest.mark.parametrize("flag", [False, True])
def test_get_answers_the_green_invoices_flag(
    client: TestClient, session: Session, flag: bool
) -> None:
    connected = create_connected_store(session, green_invoices=flag)

    response = client.get("/v1/stores", headers=connected.auth)

    assert response.status_code == 200
    assert response.json() == {"greenInvoices": flag}


def test_put_does_not_touch_green_invoices(client: TestClient, session: Session) -> None:
    connected = create_connected_store(session, green_invoices=True)

    client.put("/v1/stores", json=FULL_PROFILE | {"greenInvoices": False}, headers=connected.auth)

    assert client.get("/v1/stores", headers=connected.auth).json() == {"greenInvoices": True}


def test_api_reference_documents_both_endpoints(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    put = spec["paths"]["/v1/stores"]["put"]
    get = spec["paths"]["/v1/stores"]["get"]

    assert {"200", "400", "403"} <= set(put["responses"])
    assert {"200", "403"} <= set(get["responses"])
    examples = put["responses"]["403"]["content"]["application/problem+json"]["examples"]
    assert examples["invalid_token"]["value"]["code"] == "invalid_token"
    request_schema = json.dumps(put["requestBody"])
    assert "storeCountryCode" in json.dumps(spec["components"]["schemas"]["StoreProfileIn"])
    assert "StoreProfileIn" in request_schema
    assert any(p["name"] == "access_token" and p.get("deprecated") for p in put["parameters"])


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=6,
)


def test_odd_values_never_answer_500(client: TestClient, session: Session) -> None:
    auth = create_connected_store(session).auth

    @hypothesis_settings(max_examples=80, deadline=None)
    @given(
        overrides=st.dictionaries(
            st.sampled_from([*FULL_PROFILE, "other"]), json_values, min_size=1, max_size=4
        )
    )
    def put_answers_200_or_400(overrides: dict[str, Any]) -> None:
        response = client.put("/v1/stores", json=FULL_PROFILE | overrides, headers=auth)
        assert response.status_code in (200, 400), response.text

    put_answers_200_or_400()
