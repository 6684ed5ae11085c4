"""Endpoints 1 and 2: creating an integration token and reading its status."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.connect.models import IntegrationToken
from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from tests.connect.conftest import (
    World,
    approve,
    assert_problem,
    credentials,
    fetch_all,
    fetch_one,
    new_integration_token,
)
from tests.factories import create_partner
from tests.waiting import wait_past

STATUS = "/v1/auth/integration"
EXCHANGE = "/v1/auth/integration/token"
# A lifetime for tests that use a token before it expires: long enough for those steps
# on a busy machine (1 s was not, and 5 s was not beside six other test runs: the
# approval came after the token had lapsed).
SHORT_TTL = 10


def test_create_answers_pending_token_with_success(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    before = utcnow()
    response = client.post(STATUS, params=world.creds)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"integrationToken", "success"} and body["success"] is True
    value = body["integrationToken"]
    assert value.startswith("plk_it_") and len(value) > 40
    row = fetch_one(session, select(IntegrationToken))
    assert row.status == "pending" and row.partner_id == world.partner.partner.id
    lifetime = timedelta(seconds=settings.integration_token_ttl_seconds)
    assert before + lifetime <= row.expires_at <= utcnow() + lifetime


def test_token_is_stored_only_as_its_digest(
    client: TestClient, session: Session, world: World
) -> None:
    value = new_integration_token(client, world.partner)
    row = fetch_one(session, select(IntegrationToken))
    assert row.token_hash == digest(value)
    stored = [str(getattr(row, c.key)) for c in IntegrationToken.__table__.columns]
    assert not any(value in column for column in stored)


def test_each_create_mints_a_new_token(client: TestClient, world: World) -> None:
    first = new_integration_token(client, world.partner)
    second = new_integration_token(client, world.partner)
    assert first != second


@pytest.mark.parametrize("missing", ["client_id", "client_secret"])
def test_create_without_a_parameter_answers_400_missing_field(
    client: TestClient, world: World, missing: str
) -> None:
    params = {k: v for k, v in world.creds.items() if k != missing}
    body = assert_problem(client.post(STATUS, params=params), 400, "missing_field")
    assert body["errors"] == [{"field": missing, "message": "required"}]


def test_create_with_an_empty_parameter_answers_400_missing_field(
    client: TestClient, world: World
) -> None:
    params = {**world.creds, "client_secret": ""}
    assert_problem(client.post(STATUS, params=params), 400, "missing_field")


def test_wrong_client_id_and_wrong_secret_answer_the_same_403(
    client: TestClient, session: Session, world: World
) -> None:
    wrong_id = client.post(STATUS, params={**world.creds, "client_id": "plk_ci_nobody"})
    wrong_secret = client.post(STATUS, params={**world.creds, "client_secret": "plk_cs_wrong"})
    body = assert_problem(wrong_id, 403, "invalid_credentials")
    assert wrong_secret.json() == body
    assert world.partner.client_secret not in wrong_secret.text
    assert fetch_all(session, select(func.count()).select_from(IntegrationToken)) == [0]


def test_deactivated_partner_cannot_create(
    client: TestClient, session: Session, world: World
) -> None:
    partner = fetch_one(session, select(Partner))
    partner.active = False
    session.commit()
    assert_problem(client.post(STATUS, params=world.creds), 403, "invalid_credentials")


def test_status_reads_pending_then_finished(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    params = {**world.creds, "integration_token": token}
    assert client.get(STATUS, params=params).json() == {"status": "pending", "success": True}
    approve(session, world, token)
    assert client.get(STATUS, params=params).json() == {"status": "finished", "success": True}


def test_status_reads_cancelled_after_decline(
    client: TestClient, session: Session, world: World
) -> None:
    token = new_integration_token(client, world.partner)
    service.decline_consent(session, integration_token=token, client_id=world.partner.client_id)
    session.commit()
    response = client.get(STATUS, params={**world.creds, "integration_token": token})
    assert response.json() == {"status": "cancelled", "success": True}


def test_expired_pending_token_reads_cancelled(
    client: TestClient, world: World, settings: Settings
) -> None:
    settings.integration_token_ttl_seconds = SHORT_TTL
    token = new_integration_token(client, world.partner)
    lapsed = utcnow() + timedelta(seconds=SHORT_TTL)  # the token expires no later
    params = {**world.creds, "integration_token": token}
    assert client.get(STATUS, params=params).json()["status"] == "pending"
    wait_past(lapsed)
    assert client.get(STATUS, params=params).json()["status"] == "cancelled"


def test_unexchanged_finished_token_counts_as_cancelled_after_its_lifetime(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    settings.integration_token_ttl_seconds = SHORT_TTL
    token = new_integration_token(client, world.partner)
    lapsed = utcnow() + timedelta(seconds=SHORT_TTL)
    approve(session, world, token)
    params = {**world.creds, "integration_token": token}
    assert client.get(STATUS, params=params).json()["status"] == "finished"
    wait_past(lapsed)
    assert client.get(STATUS, params=params).json()["status"] == "cancelled"
    assert_problem(client.get(EXCHANGE, params=params), 400, "not_finished")


def test_exchanged_token_still_answers_410_after_its_lifetime(
    client: TestClient, session: Session, world: World, settings: Settings
) -> None:
    settings.integration_token_ttl_seconds = SHORT_TTL
    token = new_integration_token(client, world.partner)
    lapsed = utcnow() + timedelta(seconds=SHORT_TTL)
    approve(session, world, token)
    params = {**world.creds, "integration_token": token}
    assert client.get(EXCHANGE, params=params).status_code == 200
    wait_past(lapsed)
    assert client.get(STATUS, params=params).json()["status"] == "finished"
    assert_problem(client.get(EXCHANGE, params=params), 410, "already_exchanged")


def test_status_with_bad_credentials_answers_403(client: TestClient, world: World) -> None:
    token = new_integration_token(client, world.partner)
    params = {**world.creds, "client_secret": "nope", "integration_token": token}
    assert_problem(client.get(STATUS, params=params), 403, "invalid_credentials")


def test_status_of_unknown_token_answers_404(client: TestClient, world: World) -> None:
    params = {**world.creds, "integration_token": "plk_it_unknown"}
    assert_problem(client.get(STATUS, params=params), 404, "unknown_integration_token")


def test_status_of_another_partners_token_answers_404(
    client: TestClient, session: Session, world: World
) -> None:
    other = create_partner(session, name="Other POS", pos_type="other-pos")
    token = new_integration_token(client, other)
    params = {**world.creds, "integration_token": token}
    assert_problem(client.get(STATUS, params=params), 404, "unknown_integration_token")
    own = {**credentials(other), "integration_token": token}
    assert client.get(STATUS, params=own).status_code == 200


@pytest.mark.parametrize("missing", ["client_id", "client_secret", "integration_token"])
def test_status_without_a_parameter_answers_400(
    client: TestClient, world: World, missing: str
) -> None:
    params = {**world.creds, "integration_token": "plk_it_x"}
    del params[missing]
    assert_problem(client.get(STATUS, params=params), 400, "missing_field")


def test_status_answers_no_422_for_a_post_body(client: TestClient, world: World) -> None:
    response = client.post(STATUS, params=world.creds, content=b"[1, 2", headers={})
    assert response.status_code == 200
