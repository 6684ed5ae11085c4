"""The twilio provider against a local server speaking Twilio's Messages API."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.receipts.models import Receipt
from partnerlink.receipts.tasks import MAX_ATTEMPTS, send_due_receipts
from partnerlink.settings import Settings
from tests.conftest import free_port
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import PHONE, order_body, post, receipts
from tests.receipts.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio


def make_due(session: Session) -> None:
    session.execute(update(Receipt).values(next_attempt_at=utcnow() - timedelta(seconds=1)))
    session.commit()


def test_message_is_posted_form_encoded_with_basic_auth_and_recorded_sent(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    post(client, shop.auth, order_body())
    original_link = receipts(session)[0].link
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 1
    [request] = fake_twilio.requests
    assert request.path == f"/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json"
    assert request.content_type.startswith("application/x-www-form-urlencoded")
    expected = base64.b64encode(f"{ACCOUNT_SID}:{AUTH_TOKEN}".encode()).decode()
    assert request.authorization == f"Basic {expected}"
    assert request.form["To"] == PHONE and request.form["From"] == FROM
    assert original_link in request.form["Body"] and "Bistro Central" in request.form["Body"]
    [receipt] = receipts(session)
    assert receipt.status == "sent" and receipt.provider == "twilio"
    assert receipt.provider_message_id and receipt.provider_message_id.startswith("SM")
    # Delivered: the stored text no longer holds the key; the link still opens the page.
    key = original_link.split("?k=")[1]
    assert key not in receipt.link and key not in receipt.body
    assert client.get(original_link).status_code == 200


def test_invalid_number_answer_fails_the_receipt_without_retry(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    post(client, shop.auth, order_body())
    fake_twilio.answer_error(
        400, 21211, "The 'To' number +14155550123 is not a valid phone number."
    )
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    [receipt] = receipts(session)
    assert receipt.status == "failed" and receipt.last_error
    assert "21211" in receipt.last_error
    make_due(session)
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 0
    assert len(fake_twilio.requests) == 1


def test_wrong_credentials_fail_the_receipt(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    twilio_settings.twilio_auth_token = "wrong"
    post(client, shop.auth, order_body())
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    [receipt] = receipts(session)
    assert receipt.status == "failed" and "401" in (receipt.last_error or "")


def test_throttling_and_server_errors_are_retried_with_backoff_then_sent(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    post(client, shop.auth, order_body())
    fake_twilio.answer_error(429, 20429, "Too Many Requests", headers={"Retry-After": "30"})
    fake_twilio.answer_error(503, 20500, "Service Unavailable")
    before = utcnow()
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    [receipt] = receipts(session)
    assert receipt.status == "pending" and receipt.attempts == 1
    assert receipt.next_attempt_at >= before + timedelta(seconds=30)
    assert "429" in (receipt.last_error or "")
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 0  # not due yet
    make_due(session)
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    [receipt] = receipts(session)
    assert receipt.status == "pending" and receipt.attempts == 2
    make_due(session)
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    [receipt] = receipts(session)
    assert receipt.status == "sent" and receipt.attempts == 3
    assert len(fake_twilio.requests) == 3


def test_unreachable_provider_is_retried_and_given_up_after_max_attempts(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
) -> None:
    twilio_settings.twilio_api_url = f"http://127.0.0.1:{free_port()}"
    post(client, shop.auth, order_body())
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 1
        [receipt] = receipts(session)
        assert receipt.attempts == attempt
        make_due(session)
    assert receipt.status == "failed" and "unreachable" in (receipt.last_error or "")
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 0


def test_missing_twilio_settings_fail_the_receipt_with_a_reason(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, app: Any, settings: Settings
) -> None:
    settings.sms_provider = "twilio"
    post(client, shop.auth, order_body())
    send_due_receipts(app.state.sessionmaker, settings)
    [receipt] = receipts(session)
    assert receipt.status == "failed" and "not configured" in (receipt.last_error or "")
