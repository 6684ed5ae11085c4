"""Webhooks in the Standard Webhooks form (CONTRACT.md §13), checked with the
`standardwebhooks` library from PyPI and independently with hmac and base64, and the
24 hours a rotated secret keeps signing."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import re
import secrets
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from partnerlink.webhooks.events import STORE_SETTINGS_UPDATED, record_event
from partnerlink.webhooks.registration import rotate_webhook_secret
from partnerlink.webhooks.signing import webhook_secret
from tests.factories import ConnectedStoreFixture
from tests.merchant.helpers import sign_in
from tests.webhooks.conftest import until
from tests.webhooks.receiver import Received, Receiver, verified

STANDARD_SECRET = re.compile(r"whsec_[A-Za-z0-9+/]+={0,2}")


def standard_verified(received: Received, secret: str) -> bool:
    """The `standardwebhooks` library's own check (signature, and a fresh timestamp)."""
    try:
        event = Webhook(secret).verify(received.body, received.headers)
    except WebhookVerificationError:
        return False
    return bool(event == received.event)


def independently_verified(received: Received, secret: str) -> bool:
    """CONTRACT §13 read alone: `v1,<base64 HMAC-SHA256>` of "<id>.<timestamp>.<body>",
    keyed with the bytes the standard, padded base64 after `whsec_` encodes."""
    key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    assert 24 <= len(key) <= 64
    signed = (
        f"{received.headers['webhook-id']}.{received.headers['webhook-timestamp']}.".encode()
        + received.body
    )
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(expected, given)
        for given in received.headers["webhook-signature"].split(" ")
    )


def send_event(session: Session, shop: ConnectedStoreFixture, n: int) -> str:
    event_id = record_event(
        session,
        partner_id=shop.partner.partner.id,
        connection_id=None,
        event_type=STORE_SETTINGS_UPDATED,
        data={"storeId": shop.store.id, "greenInvoices": n % 2 == 0},
    )
    session.commit()
    assert event_id is not None
    return event_id


def test_events_verify_with_the_standard_webhooks_library(
    client: TestClient,
    app: FastAPI,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, secret = hooked
    merchant = sign_in(client)
    client.patch(
        f"/merchant/api/stores/{shop.store.id}", json={"greenInvoices": True}, headers=merchant
    )
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    [received] = receiver.received
    headers = received.headers
    assert headers["webhook-id"] == received.event["id"]
    timestamp = received.signature.split(",")[0].removeprefix("t=")
    assert headers["webhook-timestamp"] == timestamp  # one moment, both signatures
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", headers["webhook-signature"])
    assert standard_verified(received, secret)
    assert independently_verified(received, secret)
    assert verified(received, secret)  # PartnerLink-Signature still, keyed as before
    # Another secret, or other bytes, do not verify.
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    assert not standard_verified(received, other)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(received.body + b" ", headers)


def test_new_secrets_are_standard_base64_of_24_to_64_bytes(
    session: Session, hook_settings: Settings, hooked: tuple[ConnectedStoreFixture, str]
) -> None:
    shop, first = hooked
    minted = [first]
    for _ in range(5):
        minted.append(rotate_webhook_secret(session, hook_settings, partner=shop.partner.partner))
    for secret in minted:
        assert STANDARD_SECRET.fullmatch(secret), secret
        key = base64.b64decode(secret[len("whsec_") :], validate=True)
        assert 24 <= len(key) <= 64
        assert base64.b64encode(key).decode() == secret[len("whsec_") :]
    assert len(set(minted)) == len(minted)


def test_a_rotated_secret_signs_beside_the_new_one_for_24_hours_then_stops(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, old = hooked
    new = rotate_webhook_secret(session, hook_settings, partner=shop.partner.partner)
    session.commit()
    partner = session.scalars(select(Partner)).one()
    assert partner.webhook_previous_secret_until is not None
    left = partner.webhook_previous_secret_until - utcnow()
    assert timedelta(hours=23, minutes=59) < left <= timedelta(hours=24)
    send_event(session, shop, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    during = receiver.received[0]
    assert during.signature.count("v1=") == 2
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    for secret in (new, old):
        assert verified(during, secret)
        assert standard_verified(during, secret)
        assert independently_verified(during, secret)
    # The new secret's signature comes first in both headers.
    t, newest, _ = during.signature.split(",")
    first_only = dataclasses.replace(
        during,
        signature=f"{t},{newest}",
        headers={
            **during.headers,
            "webhook-signature": during.headers["webhook-signature"].split()[0],
        },
    )
    assert verified(first_only, new) and independently_verified(first_only, new)

    # 24 hours later (the stored end of the overlap moved back a day): only the new one.
    ends = partner.webhook_previous_secret_until
    session.execute(
        update(Partner).values(webhook_previous_secret_until=ends - timedelta(hours=24))
    )
    session.commit()
    send_event(session, shop, 2)
    until(lambda: len(receiver.received) >= 2, app, hook_settings, 10)
    after = receiver.received[1]
    assert after.signature.count("v1=") == 1
    assert " " not in after.headers["webhook-signature"]
    assert verified(after, new) and standard_verified(after, new)
    assert not verified(after, old) and not standard_verified(after, old)
    assert independently_verified(after, new) and not independently_verified(after, old)


def test_rotating_twice_keeps_only_the_secret_just_replaced(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, first = hooked
    second = rotate_webhook_secret(session, hook_settings, partner=shop.partner.partner)
    third = rotate_webhook_secret(session, hook_settings, partner=shop.partner.partner)
    session.commit()
    send_event(session, shop, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    [received] = receiver.received
    assert standard_verified(received, third) and standard_verified(received, second)
    assert not standard_verified(received, first) and not verified(received, first)


def test_a_secret_minted_before_standard_webhooks_keeps_signing_its_header(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    """A partner registered before migration 0022 holds `whsec_` + unpadded URL-safe
    base64 (no Standard Webhooks secret): its PartnerLink-Signature goes on as before,
    and one rotation gives it a secret the standard libraries take, the old one still
    signing PartnerLink-Signature for 24 hours."""
    shop, _ = hooked
    legacy_nonce = secrets.token_urlsafe(24)  # as nonces were drawn before 0022
    session.execute(update(Partner).values(webhook_secret_nonce=legacy_nonce))
    session.commit()
    # The derivation partners already hold, written out independently.
    derived = hmac.new(
        hook_settings.signing_key,
        b"webhook-signing-secret:" + legacy_nonce.encode(),
        hashlib.sha256,
    ).digest()
    legacy = "whsec_" + base64.urlsafe_b64encode(derived).rstrip(b"=").decode()
    assert webhook_secret(hook_settings.signing_key, legacy_nonce) == legacy
    with pytest.raises(binascii.Error):  # not padded standard base64
        base64.b64decode(legacy.removeprefix("whsec_"), validate=True)

    send_event(session, shop, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    before = receiver.received[0]
    assert verified(before, legacy)
    assert before.headers["webhook-id"] == before.event["id"]
    assert before.headers["webhook-timestamp"].isdigit()
    assert "webhook-signature" not in before.headers  # no Standard key to sign with

    partner = session.scalars(select(Partner)).one()
    new = rotate_webhook_secret(session, hook_settings, partner=partner)
    session.commit()
    send_event(session, shop, 2)
    until(lambda: len(receiver.received) >= 2, app, hook_settings, 10)
    after = receiver.received[1]
    assert verified(after, new) and verified(after, legacy)
    assert after.headers["webhook-signature"].count("v1,") == 1
    assert standard_verified(after, new) and independently_verified(after, new)
