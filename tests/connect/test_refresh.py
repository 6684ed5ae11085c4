"""Endpoint 4: refreshing the access token; revocation ends the refresh token too."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection
from tests.connect.conftest import (
    World,
    approve,
    assert_problem,
    credentials,
    exchange,
    fetch_one,
    new_integration_token,
)
from tests.factories import create_partner

REFRESH = "/v1/auth/token"


def _connect(client: TestClient, session: Session, world: World) -> dict[str, object]:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    return exchange(client, world, token)


def _refresh_params(world: World, refresh_token: object) -> dict[str, str]:
    return {**world.creds, "code": str(refresh_token), "grant_type": "refresh_token"}


def _bearer(token: object) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_refresh_answers_a_new_working_access_token(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    tokens = _connect(client, session, world)
    before = utcnow()
    response = client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"accessToken", "expiration", "success"} and body["success"] is True
    assert body["accessToken"].startswith("plk_at_")
    assert body["accessToken"] != tokens["accessToken"]
    expiration = datetime.fromisoformat(body["expiration"])
    lifetime = timedelta(seconds=settings.access_token_ttl_seconds)
    assert before + lifetime - timedelta(seconds=1) <= expiration <= utcnow() + lifetime
    assert client.get("/v1/stores", headers=_bearer(body["accessToken"])).status_code == 200


def test_previous_access_token_stays_valid_after_refresh(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
    assert client.get("/v1/stores", headers=_bearer(tokens["accessToken"])).status_code == 200


def test_refresh_token_can_be_used_repeatedly(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    for _ in range(3):
        response = client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
        assert response.status_code == 200


def test_refresh_works_after_the_access_token_expired(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    settings.access_token_ttl_seconds = 1
    tokens = _connect(client, session, world)
    time.sleep(1.1)
    expired = client.get("/v1/stores", headers=_bearer(tokens["accessToken"]))
    assert_problem(expired, 403, "invalid_token")
    settings.access_token_ttl_seconds = 3600
    response = client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
    assert response.status_code == 200, response.text
    fresh = _bearer(response.json()["accessToken"])
    assert client.get("/v1/stores", headers=fresh).status_code == 200


def test_revoked_connection_refuses_refresh_and_access(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    refreshed = client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
    revoke_connection(session, fetch_one(session, select(Connection)), reason="merchant")
    session.commit()
    response = client.post(REFRESH, params=_refresh_params(world, tokens["refreshToken"]))
    assert_problem(response, 403, "invalid_token")
    for access in (tokens["accessToken"], refreshed.json()["accessToken"]):
        assert_problem(client.get("/v1/stores", headers=_bearer(access)), 403, "invalid_token")


@pytest.mark.parametrize("grant_type", ["authorization_code", "REFRESH_TOKEN", "refresh"])
def test_wrong_grant_type_answers_400(
    client: TestClient, session: Session, world: World, grant_type: str
) -> None:
    tokens = _connect(client, session, world)
    params = {**_refresh_params(world, tokens["refreshToken"]), "grant_type": grant_type}
    assert_problem(client.post(REFRESH, params=params), 400, "invalid_grant_type")


def test_absent_grant_type_answers_400_missing_field(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    params = _refresh_params(world, tokens["refreshToken"])
    del params["grant_type"]
    body = assert_problem(client.post(REFRESH, params=params), 400, "missing_field")
    assert body["errors"] == [{"field": "grant_type", "message": "required"}]


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "code"])
def test_refresh_without_a_parameter_answers_400(
    client: TestClient, world: World, missing: str
) -> None:
    params = _refresh_params(world, "plk_rt_x")
    del params[missing]
    assert_problem(client.post(REFRESH, params=params), 400, "missing_field")


def test_refresh_with_bad_credentials_answers_403(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    for bad in ({"client_id": "plk_ci_x"}, {"client_secret": "plk_cs_x"}):
        params = {**_refresh_params(world, tokens["refreshToken"]), **bad}
        assert_problem(client.post(REFRESH, params=params), 403, "invalid_credentials")


def test_unknown_refresh_token_answers_403(client: TestClient, world: World) -> None:
    response = client.post(REFRESH, params=_refresh_params(world, "plk_rt_unknown"))
    assert_problem(response, 403, "invalid_token")


def test_access_token_is_not_a_refresh_token(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    response = client.post(REFRESH, params=_refresh_params(world, tokens["accessToken"]))
    assert_problem(response, 403, "invalid_token")


def test_another_partner_cannot_use_the_refresh_token(
    client: TestClient, session: Session, world: World
) -> None:
    tokens = _connect(client, session, world)
    other = create_partner(session, name="Other POS", pos_type="other-pos")
    params = {
        **credentials(other),
        "code": str(tokens["refreshToken"]),
        "grant_type": "refresh_token",
    }
    assert_problem(client.post(REFRESH, params=params), 403, "invalid_token")
