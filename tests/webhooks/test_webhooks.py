"""Signed webhooks (CONTRACT.md §9), delivered to a real local HTTP receiver."""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from partnerlink.problems import ValidationFailed
from partnerlink.settings import Settings
from partnerlink.stores.service import open_connection_with_access_token
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.registration import rotate_webhook_secret, set_webhook_url
from partnerlink.webhooks.tasks import deliver_due_webhooks, wait_for_deliveries
from tests.customers.conftest import ingest
from tests.factories import ConnectedStoreFixture, create_connected_store, create_partner
from tests.merchant.helpers import sign_in
from tests.webhooks.conftest import deliver, events, until
from tests.webhooks.receiver import Receiver, start_receiver, verified


def test_every_cause_sends_its_signed_event(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, secret = hooked
    merchant = sign_in(client)
    store_id = shop.store.id
    # store.settings.updated, from the merchant's switch (a same-value PATCH sends nothing)
    for value in (True, True, False):
        assert (
            client.patch(
                f"/merchant/api/stores/{store_id}", json={"greenInvoices": value}, headers=merchant
            ).status_code
            == 200
        )
    # customers.upload.finished
    status = ingest(client, app, hook_settings, shop, [{"email": "ada@example.com"}])
    # connection.revoked, replaced: the store pairs with the same partner again
    [old_connection] = client.get(
        "/v1/connections",
        params={"client_id": shop.partner.client_id, "client_secret": shop.partner.client_secret},
    ).json()["connections"]
    renewed = open_connection_with_access_token(
        session,
        store_id=store_id,
        partner_id=shop.partner.partner.id,
        pos_type=shop.partner.partner.pos_type,
        method="pairing",
        ttl_seconds=None,
    )
    session.commit()
    # connection.revoked, merchant: the merchant disconnects the new one
    assert (
        client.delete(
            f"/merchant/api/connections/{renewed.connection.id}", headers=merchant
        ).status_code
        == 204
    )
    until(lambda: len(receiver.received) >= 5, app, hook_settings, 10)

    got = receiver.events()
    # In order per connection: the first connection's four, then the new one's own.
    first_queue = [e for e in got if e["data"].get("connectionId") != renewed.connection.id]
    assert [e["type"] for e in first_queue] == [
        "store.settings.updated",
        "store.settings.updated",
        "customers.upload.finished",
        "connection.revoked",
    ]
    assert first_queue[0]["data"] == {"storeId": store_id, "greenInvoices": True}
    assert first_queue[1]["data"] == {"storeId": store_id, "greenInvoices": False}
    assert first_queue[2]["data"] == {
        "uploadId": status["uploadId"],
        "storeId": store_id,
        "status": "done",
        "records": 1,
        "created": 1,
        "updated": 0,
        "unchanged": 0,
        "rejected": 0,
    }
    assert first_queue[3]["data"]["reason"] == "replaced"
    assert first_queue[3]["data"]["connectionId"] == old_connection["connectionId"]
    [merchant_revoked] = [e for e in got if e not in first_queue]
    assert merchant_revoked["data"] == {
        "connectionId": renewed.connection.id,
        "storeId": store_id,
        "reason": "merchant",
    }
    for received in receiver.received:
        assert received.content_type == "application/json"
        assert verified(received, secret)
        assert set(received.event) == {"id", "type", "createdAt", "data"}
        assert received.event["id"].startswith("evt_")
    assert not verified(receiver.received[0], secret + "x")
    assert {e.status for e in events(session)} == {"delivered"}


def test_a_partners_own_revocation_is_its_event(
    client: TestClient,
    app: FastAPI,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, secret = hooked
    credentials = {"client_id": shop.partner.client_id, "client_secret": shop.partner.client_secret}
    assert client.post(
        "/v1/auth/revoke", params={**credentials, "token": "plk_at_unknown"}
    ).json() == {"success": True}
    assert client.post(
        "/v1/auth/revoke", params={**credentials, "token": shop.access_token}
    ).json() == {"success": True}
    assert client.post(
        "/v1/auth/revoke", params={**credentials, "token": shop.access_token}
    ).json() == {"success": True}
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    deliver(app, hook_settings)
    [event] = receiver.events()  # the unknown token and the repeat changed nothing
    assert event["type"] == "connection.revoked" and event["data"]["reason"] == "partner"
    assert verified(receiver.received[0], secret)


def test_a_refused_request_writes_no_event(
    client: TestClient,
    session: Session,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _secret = hooked
    merchant = sign_in(client)
    refused = client.patch(
        f"/merchant/api/stores/{shop.store.id}", json={"greenInvoices": "maybe"}, headers=merchant
    )
    assert refused.status_code == 400
    other = client.patch(
        f"/merchant/api/stores/{shop.store.id}",
        json={"greenInvoices": True},
        headers={"Authorization": "Bearer plk_ms_wrong"},
    )
    assert other.status_code == 401
    assert events(session) == []


def test_the_secret_is_never_stored_and_rotation_adds_a_signature(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, first = hooked
    assert first.startswith("whsec_")
    stored = session.scalars(select(Partner)).one()
    assert first not in repr(vars(stored)) and first[6:] not in repr(vars(stored))
    # Changing the URL keeps the secret (nothing to show).
    again = set_webhook_url(session, hook_settings, partner=stored, url=receiver.url + "?v=2")
    assert again.secret is None
    second = rotate_webhook_secret(session, hook_settings, partner=stored)
    session.commit()
    assert second.startswith("whsec_") and second != first
    merchant = sign_in(client)
    client.patch(
        f"/merchant/api/stores/{shop.store.id}", json={"greenInvoices": True}, headers=merchant
    )
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    assert verified(receiver.received[0], second)
    assert verified(receiver.received[0], first)  # for 24 h (test_standard_webhooks.py)
    assert not verified(receiver.received[0], first + "x")


def test_a_receiver_down_for_a_while_gets_everything_in_order(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    """ "Down for an hour" with the retry wait shortened 200 times (0.05 s instead of 10):
    the waits double up to their cap while the receiver answers 503."""
    shop, secret = hooked
    merchant = sign_in(client)
    receiver.status = 503
    for n in range(6):
        client.patch(
            f"/merchant/api/stores/{shop.store.id}",
            json={"greenInvoices": n % 2 == 0},
            headers=merchant,
        )
    down_until = time.monotonic() + 1.5
    while time.monotonic() < down_until:
        deliver(app, hook_settings)
        time.sleep(0.02)
    stored = events(session)
    assert stored[0].attempts >= 4 and stored[0].status == "pending"
    assert all(e.attempts == 0 for e in stored[1:])  # nothing overtook the first
    receiver.status = 200
    until(lambda: len(receiver.received) >= 6, app, hook_settings, 30)
    got = receiver.events()
    assert [e["data"]["greenInvoices"] for e in got] == [True, False, True, False, True, False]
    assert [e["id"] for e in got] == [e.event_id for e in stored]
    assert all(verified(r, secret) for r in receiver.received)


def test_a_hanging_receiver_does_not_hold_up_another_partner(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    slow_shop, _ = hooked
    receiver.delay = 2.5
    quick = start_receiver()
    try:
        other = create_connected_store(session, pos_type="other-pos", email="other@example.com")
        set_webhook_url(session, hook_settings, partner=other.partner.partner, url=quick.url)
        session.commit()
        merchant = sign_in(client)
        client.patch(
            f"/merchant/api/stores/{slow_shop.store.id}",
            json={"greenInvoices": True},
            headers=merchant,
        )
        other_merchant = sign_in(client, email="other@example.com")
        client.patch(
            f"/merchant/api/stores/{other.store.id}",
            json={"greenInvoices": True},
            headers=other_merchant,
        )
        started = time.monotonic()
        deliver_due_webhooks(app.state.sessionmaker, hook_settings)  # both start; none awaited
        assert time.monotonic() - started < 1.0
        while not quick.received:
            assert time.monotonic() - started < 1.5, "the quick receiver waited for the slow one"
            time.sleep(0.01)
        assert receiver.received == []  # the slow one is still answering
        wait_for_deliveries()
        assert len(receiver.received) == 1
    finally:
        quick.close()


def test_private_addresses_are_refused_at_registration_and_at_delivery(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    store_id = shop.store.id
    partner = session.scalars(select(Partner)).one()
    hook_settings.webhook_allow_private = False
    assert set_webhook_url(
        session, hook_settings, partner=partner, url="https://93.184.215.14/hooks"
    ).url
    for url in (
        "http://127.0.0.1:8080/hooks",
        "http://localhost/hooks",
        "http://10.1.2.3/hooks",
        "http://169.254.169.254/latest",
        "http://[::1]/hooks",
        "ftp://pos.example.com/hooks",
        "pos.example.com/hooks",
        "",
    ):
        with pytest.raises(ValidationFailed) as refused:
            set_webhook_url(session, hook_settings, partner=partner, url=url)
        assert refused.value.code == "invalid_field"
    session.rollback()
    # Registered while allowed, then no longer: the event is not sent.
    merchant = sign_in(client)
    client.patch(f"/merchant/api/stores/{store_id}", json={"greenInvoices": True}, headers=merchant)
    deliver(app, hook_settings)
    assert receiver.received == []
    [event] = events(session)
    assert event.status == "pending" and "not sent" in (event.last_error or "")


def test_an_event_is_given_up_after_72_hours_and_the_queue_moves_on(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    merchant = sign_in(client)
    for value in (True, False):
        client.patch(
            f"/merchant/api/stores/{shop.store.id}", json={"greenInvoices": value}, headers=merchant
        )
    first = events(session)[0]
    session.execute(
        update(WebhookEvent)
        .where(WebhookEvent.seq == first.seq)
        .values(created_at=first.created_at - timedelta(hours=72, seconds=1))
    )
    session.commit()
    receiver.status = 500
    deliver(app, hook_settings)
    receiver.status = 200
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    stored = events(session)
    assert [e.status for e in stored] == ["failed", "delivered"]
    assert receiver.events()[0]["data"]["greenInvoices"] is False


def test_partners_without_a_url_get_no_events(
    client: TestClient, session: Session, settings: Settings
) -> None:
    shop = create_connected_store(session)
    merchant = sign_in(client)
    client.patch(
        f"/merchant/api/stores/{shop.store.id}", json={"greenInvoices": True}, headers=merchant
    )
    assert events(session) == []


def test_a_finished_upload_is_told_only_to_the_partner_who_uploaded(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _secret = hooked
    other_receiver = start_receiver()
    try:
        # A second partner connected to the same store, with webhooks of its own.
        other = create_partner(session, pos_type="other-pos")
        set_webhook_url(session, hook_settings, partner=other.partner, url=other_receiver.url)
        opened = open_connection_with_access_token(
            session,
            store_id=shop.store.id,
            partner_id=other.partner.id,
            pos_type=other.partner.pos_type,
            method="pairing",
            ttl_seconds=None,
        )
        session.commit()
        other_shop = dataclasses.replace(shop, access_token=opened.access_token)
        ingest(client, app, hook_settings, other_shop, [{"email": "ada@example.com"}])
        until(lambda: len(other_receiver.received) >= 1, app, hook_settings, 10)
        deliver(app, hook_settings)
        assert [e["type"] for e in other_receiver.events()] == ["customers.upload.finished"]
        assert receiver.received == []
    finally:
        other_receiver.close()
