"""Sandbox partners (CONTRACT.md §9): `_test_` credentials and tokens, test stores with no
merchant, texts that never reach a provider, and test webhook events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Merchant, Profile
from partnerlink.partners.service import (
    find_partner_by_client_id,
    register_partner,
    rotate_client_secret,
)
from partnerlink.receipts.models import Receipt
from partnerlink.receipts.tasks import send_due_receipts
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.webhooks.registration import set_webhook_url
from partnerlink.webhooks.tasks import deliver_due_webhooks, wait_for_deliveries
from tests.factories import create_connected_store
from tests.merchant.helpers import sign_in
from tests.orders.builders import order_body
from tests.receipts.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, start_fake_twilio
from tests.webhooks.receiver import Receiver, start_receiver, verified


@pytest.fixture
def sandbox(session: Session) -> dict[str, str]:
    registered = register_partner(
        session, name="Acme Sandbox", pos_type="acme-sandbox", ereceipt=True, sandbox=True
    )
    session.commit()
    return {"client_id": registered.partner.client_id, "client_secret": registered.client_secret}


@pytest.fixture
def fake_twilio(settings: Settings) -> Iterator[FakeTwilio]:
    fake = start_fake_twilio()
    settings.sms_provider = "twilio"
    settings.twilio_account_sid = ACCOUNT_SID
    settings.twilio_auth_token = AUTH_TOKEN
    settings.twilio_from = FROM
    settings.twilio_api_url = fake.url
    yield fake
    fake.server.shutdown()


def count(session: Session, model: Any) -> int:
    found = int(session.scalar(select(func.count()).select_from(model)) or 0)
    session.rollback()
    return found


def test_credentials_and_tokens_carry_test(
    client: TestClient, session: Session, sandbox: dict[str, str]
) -> None:
    assert sandbox["client_id"].startswith("plk_ci_test_")
    assert sandbox["client_secret"].startswith("plk_cs_test_")
    rotated = rotate_client_secret(session, sandbox["client_id"])
    session.commit()
    assert rotated.startswith("plk_cs_test_")
    sandbox["client_secret"] = rotated
    started = client.post("/v1/auth/integration", params=sandbox)
    integration = started.json()["integrationToken"]
    assert integration.startswith("plk_it_test_")
    # The consent flow with a merchant's own profile: test tokens, and a test store.
    shop = create_connected_store(session)
    session.commit()
    profile_id = shop.profile.id
    session.rollback()
    approved = client.post(
        f"/merchant/api/consents/{integration}/approve",
        json={"clientId": sandbox["client_id"], "profileId": profile_id},
        headers=sign_in(client),
    )
    assert approved.status_code == 200, approved.text
    tokens = client.get(
        "/v1/auth/integration/token", params={**sandbox, "integration_token": integration}
    ).json()
    assert tokens["accessToken"].startswith("plk_at_test_")
    assert tokens["refreshToken"].startswith("plk_rt_test_")
    refreshed = client.post(
        "/v1/auth/token",
        params={**sandbox, "code": tokens["refreshToken"], "grant_type": "refresh_token"},
    ).json()
    assert refreshed["accessToken"].startswith("plk_at_test_")
    status = client.get(
        "/v1/auth/token/status", headers={"Authorization": f"Bearer {refreshed['accessToken']}"}
    ).json()
    store = session.get(Store, status["storeId"])
    assert store is not None and store.is_test
    session.rollback()


def test_the_whole_pairing_flow_runs_with_no_merchant_and_texts_stay_home(
    client: TestClient,
    app: FastAPI,
    session: Session,
    settings: Settings,
    sandbox: dict[str, str],
    fake_twilio: FakeTwilio,
) -> None:
    answer = client.post("/v1/sandbox/pairing-codes", params=sandbox)
    assert answer.status_code == 200, answer.text
    reserved = answer.json()
    assert set(reserved) == {"code", "storeId", "expiresAt"}
    assert 100_000 <= reserved["code"] <= 999_999 and reserved["expiresAt"].endswith("Z")
    paired = client.post("/v1/auth/integration/pair", json={"code": reserved["code"]}).json()
    assert paired["storeId"] == reserved["storeId"]
    token = paired["access_token"]
    assert token.startswith("plk_at_test_")
    bearer = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/stores", headers=bearer).json() == {"greenInvoices": True}
    assert client.post("/v1/orders", json=order_body(), headers=bearer).status_code == 200

    assert send_due_receipts(app.state.sessionmaker, settings) == 1
    assert fake_twilio.requests == []  # recorded, never sent to the provider
    receipt = session.scalars(select(Receipt)).one()
    assert (receipt.status, receipt.provider) == ("sent", "outbox")
    # The test store lives in the sandbox merchant's own profile, never a real one's.
    store = session.get(Store, reserved["storeId"])
    assert store is not None and store.is_test
    profile = session.get(Profile, store.profile_id)
    assert profile is not None
    owner = session.get(Merchant, profile.merchant_id)
    assert owner is not None and owner.email.endswith("@sandbox.partnerlink.invalid")
    session.rollback()


def test_a_live_stores_texts_still_go_out(
    client: TestClient,
    app: FastAPI,
    session: Session,
    settings: Settings,
    sandbox: dict[str, str],
    fake_twilio: FakeTwilio,
) -> None:
    live = create_connected_store(session, ereceipt=True, green_invoices=True)
    session.commit()
    client.post("/v1/orders", json=order_body("LIVE-1"), headers=live.auth)
    code = client.post("/v1/sandbox/pairing-codes", params=sandbox).json()["code"]
    token = client.post("/v1/auth/integration/pair", json={"code": code}).json()["access_token"]
    client.post(
        "/v1/orders", json=order_body("TEST-1"), headers={"Authorization": f"Bearer {token}"}
    )
    assert send_due_receipts(app.state.sessionmaker, settings) == 2
    assert len(fake_twilio.requests) == 1
    assert "LIVE-1" in fake_twilio.requests[0].form["Body"]


def test_live_clients_are_refused_and_nothing_is_stored(
    client: TestClient, session: Session, sandbox: dict[str, str]
) -> None:
    live = create_connected_store(session)
    session.commit()
    stores_before = count(session, Store)
    refused = client.post(
        "/v1/sandbox/pairing-codes",
        params={"client_id": live.partner.client_id, "client_secret": live.partner.client_secret},
    )
    assert refused.status_code == 403 and refused.json()["code"] == "not_sandbox"
    wrong = client.post(
        "/v1/sandbox/pairing-codes", params={**sandbox, "client_secret": "plk_cs_test_wrong"}
    )
    assert wrong.status_code == 403 and wrong.json()["code"] == "invalid_credentials"
    missing = client.post("/v1/sandbox/pairing-codes", params={"client_id": sandbox["client_id"]})
    assert missing.status_code == 400
    assert count(session, Store) == stores_before


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = start_receiver()
    yield server
    server.close()


def test_a_test_webhook_of_each_type_arrives_signed(
    client: TestClient,
    app: FastAPI,
    session: Session,
    settings: Settings,
    sandbox: dict[str, str],
    receiver: Receiver,
) -> None:
    no_url = client.post("/v1/sandbox/webhooks", params={**sandbox, "type": "connection.revoked"})
    assert no_url.status_code == 400 and no_url.json()["code"] == "no_webhook_url"
    settings.webhook_allow_private = True
    partner = find_partner_by_client_id(session, sandbox["client_id"])
    assert partner is not None
    secret = set_webhook_url(session, settings, partner=partner, url=receiver.url).secret
    session.commit()
    assert secret is not None
    unknown = client.post("/v1/sandbox/webhooks", params={**sandbox, "type": "order.created"})
    assert unknown.status_code == 400 and unknown.json()["code"] == "invalid_field"
    ids = []
    for event_type in ("connection.revoked", "store.settings.updated", "customers.upload.finished"):
        answer = client.post("/v1/sandbox/webhooks", params={**sandbox, "type": event_type})
        assert answer.status_code == 200, answer.text
        ids.append(answer.json()["eventId"])
    for _ in range(3):
        deliver_due_webhooks(app.state.sessionmaker, settings)
        wait_for_deliveries()
    assert [e["id"] for e in receiver.events()] == ids
    assert [e["type"] for e in receiver.events()] == [
        "connection.revoked",
        "store.settings.updated",
        "customers.upload.finished",
    ]
    assert all(verified(r, secret) for r in receiver.received)
