"""Endpoint 3: exchanging a finished integration token, once, for tokens."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.db.base import utcnow
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection
from tests.connect.conftest import (
    World,
    approve,
    assert_problem,
    build_world,
    credentials,
    exchange,
    fetch_all,
    fetch_one,
    new_integration_token,
)
from tests.factories import create_partner, create_store

EXCHANGE = "/v1/auth/integration/token"


def _params(world: World, token: str) -> dict[str, str]:
    return {**world.creds, "integration_token": token}


def test_exchange_answers_tokens_once(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    before = utcnow()
    body = exchange(client, world, token)
    assert set(body) == {"accessToken", "refreshToken", "expiration", "success", "ereceipt"}
    assert str(body["accessToken"]).startswith("plk_at_")
    assert str(body["refreshToken"]).startswith("plk_rt_")
    assert body["success"] is True and body["ereceipt"] is False
    expiration = datetime.fromisoformat(str(body["expiration"]))
    assert expiration.utcoffset() == timedelta(0)
    lifetime = timedelta(seconds=settings.access_token_ttl_seconds)
    assert before + lifetime - timedelta(seconds=1) <= expiration <= utcnow() + lifetime


def test_second_exchange_answers_410(client: TestClient, session: Session, world: World) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    exchange(client, world, token)
    second = client.get(EXCHANGE, params=_params(world, token))
    body = assert_problem(second, 410, "already_exchanged")
    assert "accessToken" not in body
    status = client.get("/v1/auth/integration", params=_params(world, token))
    assert status.json()["status"] == "finished"


def test_access_token_opens_the_chosen_store(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    body = exchange(client, world, token)
    auth = {"Authorization": f"Bearer {body['accessToken']}"}
    response = client.get("/v1/stores", headers=auth)
    assert response.status_code == 200, response.text
    store = fetch_one(session, select(Store).where(Store.id == world.store.id))
    assert store.pos_type == world.partner.partner.pos_type
    connection = fetch_one(session, select(Connection))
    assert connection.store_id == world.store.id and connection.method == "consent"
    assert connection.partner_id == world.partner.partner.id


def test_exchange_of_pending_token_answers_400_not_finished(
    client: TestClient, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    assert_problem(client.get(EXCHANGE, params=_params(world, token)), 400, "not_finished")


def test_exchange_of_declined_token_answers_400(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    service.decline_consent(session, integration_token=token, client_id=world.partner.client_id)
    session.commit()
    assert_problem(client.get(EXCHANGE, params=_params(world, token)), 400, "not_finished")


def test_exchange_of_expired_token_answers_400(
    client: TestClient, world: World, settings: Settings
) -> None:
    settings.integration_token_ttl_seconds = 1
    token = new_integration_token(client, world.partner)
    time.sleep(1.1)
    assert_problem(client.get(EXCHANGE, params=_params(world, token)), 400, "not_finished")


def test_exchange_when_the_chosen_store_was_deleted_answers_400(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    session.execute(delete(Store).where(Store.id == world.store.id))
    session.commit()
    assert_problem(client.get(EXCHANGE, params=_params(world, token)), 400, "not_finished")
    assert fetch_all(session, select(Connection)) == []


def test_exchange_with_bad_credentials_answers_403_and_consumes_nothing(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    for bad in ({"client_id": "plk_ci_x"}, {"client_secret": "plk_cs_x"}):
        response = client.get(EXCHANGE, params={**_params(world, token), **bad})
        assert_problem(response, 403, "invalid_credentials")
    exchange(client, world, token)


def test_exchange_of_unknown_token_answers_404(client: TestClient, world: World) -> None:
    response = client.get(EXCHANGE, params=_params(world, "plk_it_nothing"))
    assert_problem(response, 404, "unknown_integration_token")


def test_another_partner_cannot_exchange_the_token(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    approve(session, world, token)
    other = create_partner(session, name="Other POS", pos_type="other-pos")
    response = client.get(EXCHANGE, params={**credentials(other), "integration_token": token})
    assert_problem(response, 404, "unknown_integration_token")
    exchange(client, world, token)


def test_exchange_without_a_parameter_answers_400(client: TestClient, world: World) -> None:
    response = client.get(EXCHANGE, params=world.creds)
    body = assert_problem(response, 400, "missing_field")
    assert body["errors"] == [{"field": "integration_token", "message": "required"}]


@pytest.mark.parametrize(
    ("offered", "chosen", "expected"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_ereceipt_needs_the_partner_to_offer_it_and_the_merchant_to_choose_it(
    client: TestClient, session: Session, offered: bool, chosen: bool, expected: bool
) -> None:
    world = build_world(session, ereceipt=offered)
    token = new_integration_token(client, world.partner)
    approve(session, world, token, green_invoices=chosen)
    body = exchange(client, world, token)
    assert body["ereceipt"] is expected
    auth = {"Authorization": f"Bearer {body['accessToken']}"}
    assert client.get("/v1/stores", headers=auth).json()["greenInvoices"] is expected


def test_new_consent_for_the_same_store_revokes_the_older_tokens(
    client: TestClient, session: Session, world: World
) -> None:
    first = new_integration_token(client, world.partner)
    approve(session, world, first)
    old = exchange(client, world, first)
    second = new_integration_token(client, world.partner)
    approve(session, world, second)
    new = exchange(client, world, second)
    old_auth = {"Authorization": f"Bearer {old['accessToken']}"}
    new_auth = {"Authorization": f"Bearer {new['accessToken']}"}
    assert_problem(client.get("/v1/stores", headers=old_auth), 403, "invalid_token")
    assert client.get("/v1/stores", headers=new_auth).status_code == 200
    refresh = client.post(
        "/v1/auth/token",
        params={**world.creds, "code": str(old["refreshToken"]), "grant_type": "refresh_token"},
    )
    assert_problem(refresh, 403, "invalid_token")
    live = [c for c in fetch_all(session, select(Connection)) if c.revoked_at is None]
    assert len(live) == 1


def test_consent_for_another_store_keeps_the_first_connection(
    client: TestClient, session: Session, world: World
) -> None:
    first = new_integration_token(client, world.partner)
    approve(session, world, first)
    old = exchange(client, world, first)
    other_store = create_store(session, world.profile, name="Bistro North", manual=True)
    second = new_integration_token(client, world.partner)
    approve(session, world, second, store_id=other_store.id)
    exchange(client, world, second)
    old_auth = {"Authorization": f"Bearer {old['accessToken']}"}
    assert client.get("/v1/stores", headers=old_auth).status_code == 200
