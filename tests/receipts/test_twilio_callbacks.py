"""Twilio's callbacks: delivery status and STOP/START replies, signed as Twilio signs them.

The signatures here are computed by the test itself from Twilio's documented
algorithm (HMAC-SHA1 over the URL and the fields sorted by name, base64), which
is checked against Twilio's own published example, not by our code or the
validator we use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.audiences.models import OptOut
from partnerlink.customers.models import Customer
from partnerlink.db.base import Base
from partnerlink.receipts.queries import list_messages
from partnerlink.receipts.schemas import messages_json
from partnerlink.receipts.service import reply_keyword
from partnerlink.receipts.tasks import send_due_receipts
from partnerlink.receipts.twilio_callbacks import signature_is_valid
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture
from tests.merchant.conftest import fresh_sign_in_budgets  # noqa: F401
from tests.merchant.helpers import sign_in
from tests.orders.builders import PHONE, order_body, post, receipts
from tests.receipts.fake_twilio import AUTH_TOKEN, FakeTwilio

# Twilio's published example (its request-validation documentation and the test suites
# of its own helper libraries).
EXAMPLE_URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
EXAMPLE_PARAMS = {
    "CallSid": "CA1234567890ABCDE",
    "Caller": "+14158675309",
    "Digits": "1234",
    "From": "+14158675309",
    "To": "+18005551212",
}
EXAMPLE_SIGNATURE = "RSOYDt4T1cUTdK1PDd93/VVr8B8="


def twilio_signature(auth_token: str, url: str, params: dict[str, str]) -> str:
    """Twilio's documented scheme: the URL, then each field's name and value, sorted."""
    signed = url + "".join(name + params[name] for name in sorted(params))
    digest = hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def test_signatures_follow_twilios_published_example() -> None:
    assert twilio_signature("12345", EXAMPLE_URL, EXAMPLE_PARAMS) == EXAMPLE_SIGNATURE
    assert signature_is_valid("12345", EXAMPLE_URL, EXAMPLE_PARAMS, EXAMPLE_SIGNATURE)
    assert not signature_is_valid(
        "12345", EXAMPLE_URL, {**EXAMPLE_PARAMS, "Digits": "9"}, EXAMPLE_SIGNATURE
    )
    assert not signature_is_valid(
        "12345", EXAMPLE_URL.replace("bar=2", "bar=3"), EXAMPLE_PARAMS, EXAMPLE_SIGNATURE
    )
    assert not signature_is_valid("54321", EXAMPLE_URL, EXAMPLE_PARAMS, EXAMPLE_SIGNATURE)
    assert not signature_is_valid("12345", EXAMPLE_URL, EXAMPLE_PARAMS, "")


def callback(
    client: TestClient, settings: Settings, path: str, fields: dict[str, str], **overrides: Any
) -> Any:
    url = settings.public_url + path
    signature = overrides.get("signature", twilio_signature(AUTH_TOKEN, url, fields))
    headers = {} if signature is None else {"X-Twilio-Signature": signature}
    return client.post(path, data=fields, headers=headers)


def status_callback(client: TestClient, settings: Settings, sid: str, status: str) -> Any:
    fields = {
        "MessageSid": sid,
        "SmsSid": sid,
        "MessageStatus": status,
        "SmsStatus": status,
        "AccountSid": "AC" + "0" * 31 + "1",
        "To": PHONE,
        "ApiVersion": "2010-04-01",
    }
    return callback(client, settings, "/webhooks/twilio/status", fields)


def reply(client: TestClient, settings: Settings, body: str, phone: str = PHONE) -> Any:
    fields = {
        "MessageSid": "SM" + "f" * 32,
        "From": phone,
        "To": "+15005550006",
        "Body": body,
        "NumMedia": "0",
        "AccountSid": "AC" + "0" * 31 + "1",
    }
    return callback(client, settings, "/webhooks/twilio/inbound", fields)


def sent_receipt(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, app: Any, settings: Settings
) -> Any:
    post(client, shop.auth, order_body())
    assert send_due_receipts(app.state.sessionmaker, settings) == 1
    [receipt] = receipts(session)
    assert receipt.status == "sent"
    return receipt


def test_messages_carry_the_status_callback_whose_final_status_the_receipt_takes(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    receipt = sent_receipt(client, shop, session, app, twilio_settings)
    [request] = fake_twilio.requests
    assert request.form["StatusCallback"] == "http://testserver/webhooks/twilio/status"

    sid = receipt.provider_message_id
    answer = status_callback(client, twilio_settings, sid, "sent")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/xml")
    assert receipts(session)[0].status == "sent"
    assert status_callback(client, twilio_settings, sid, "delivered").status_code == 200
    assert receipts(session)[0].status == "delivered"
    # Late or repeated callbacks never move it back.
    for late in ("sent", "queued", "undelivered", "delivered"):
        status_callback(client, twilio_settings, sid, late)
        assert receipts(session)[0].status == "delivered"
    assert messages_json(list_messages(session, limit=5))[0]["status"] == "delivered"


@pytest.mark.parametrize("final", ["undelivered", "failed"])
def test_undelivered_and_failed_messages_show_so(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
    final: str,
) -> None:
    receipt = sent_receipt(client, shop, session, app, twilio_settings)
    status_callback(client, twilio_settings, receipt.provider_message_id, final)
    assert receipts(session)[0].status == final
    status_callback(client, twilio_settings, "SM" + "0" * 32, "delivered")  # someone else's
    assert receipts(session)[0].status == final


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "not-a-signature",
        twilio_signature("another-token", "http://testserver/webhooks/twilio/status", {}),
    ],
)
def test_unsigned_or_wrongly_signed_callbacks_answer_403_and_change_nothing(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
    signature: str | None,
) -> None:
    receipt = sent_receipt(client, shop, session, app, twilio_settings)
    fields = {"MessageSid": receipt.provider_message_id, "MessageStatus": "failed"}
    answer = callback(
        client, twilio_settings, "/webhooks/twilio/status", fields, signature=signature
    )
    assert answer.status_code == 403
    assert answer.json()["code"] == "invalid_signature"
    answer = callback(
        client,
        twilio_settings,
        "/webhooks/twilio/inbound",
        {"From": PHONE, "Body": "STOP"},
        signature=signature,
    )
    assert answer.status_code == 403
    assert receipts(session)[0].status == "sent"
    assert session.scalars(select(OptOut)).all() == []


def test_a_signature_for_another_address_is_refused(
    client: TestClient, twilio_settings: Settings, fake_twilio: FakeTwilio
) -> None:
    fields = {"From": PHONE, "Body": "STOP"}
    elsewhere = twilio_signature(AUTH_TOKEN, "http://testserver/webhooks/twilio/status", fields)
    answer = callback(
        client, twilio_settings, "/webhooks/twilio/inbound", fields, signature=elsewhere
    )
    assert answer.status_code == 403


def test_without_a_twilio_auth_token_every_callback_is_refused(
    client: TestClient, settings: Settings
) -> None:
    answer = client.post(
        "/webhooks/twilio/inbound",
        data={"From": PHONE, "Body": "STOP"},
        headers={
            "X-Twilio-Signature": twilio_signature(
                "", "http://testserver/webhooks/twilio/inbound", {"From": PHONE, "Body": "STOP"}
            )
        },
    )
    assert answer.status_code == 403


def test_stop_suppresses_receipts_and_opts_out_until_start(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    app: Any,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    post(client, shop.auth, order_body("before-stop"))  # pending when STOP arrives
    answer = reply(client, twilio_settings, "  stop ")
    assert answer.status_code == 200 and "<Response>" in answer.text
    assert [r.status for r in receipts(session)] == ["suppressed"]
    [customer] = session.scalars(select(Customer)).all()
    assert [o.customer_id for o in session.scalars(select(OptOut))] == [customer.id]
    session.rollback()

    post(client, shop.auth, order_body("after-stop"))
    send_due_receipts(app.state.sessionmaker, twilio_settings)
    assert [r.status for r in receipts(session)] == ["suppressed", "suppressed"]
    assert fake_twilio.requests == []  # nothing ever reached the provider
    assert [m["status"] for m in messages_json(list_messages(session, limit=5))] == [
        "suppressed"
    ] * 2
    session.rollback()

    assert reply(client, twilio_settings, "START").status_code == 200
    assert session.scalars(select(OptOut)).all() == []
    session.rollback()
    post(client, shop.auth, order_body("after-start"))
    assert send_due_receipts(app.state.sessionmaker, twilio_settings) == 1
    assert [r.status for r in receipts(session)] == ["suppressed", "suppressed", "sent"]
    assert len(fake_twilio.requests) == 1


def _opted_out(session: Session) -> list[tuple[bool, bool]]:
    """(by the merchant, by STOP) of each opt-out."""
    rows = [(o.by_merchant, o.by_stop) for o in session.scalars(select(OptOut))]
    session.rollback()
    return rows


def test_start_lifts_only_what_stop_did_never_the_merchants_opt_out(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, twilio_settings: Settings
) -> None:
    post(client, shop.auth, order_body())
    owner = sign_in(client)
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/opt-out"
    assert client.post(path, json={"phoneNumber": PHONE}, headers=owner).json() == {"optedOut": 1}
    assert reply(client, twilio_settings, "STOP").status_code == 200
    assert reply(client, twilio_settings, "START").status_code == 200
    assert _opted_out(session) == [(True, False)]  # the merchant's opt-out stays

    # The merchant lifts its own; a STOP meanwhile stays until START.
    assert reply(client, twilio_settings, "STOP").status_code == 200
    lifted = client.request("DELETE", path, json={"phoneNumber": PHONE}, headers=owner)
    assert lifted.status_code == 200 and lifted.json() == {"optedIn": 1}
    assert _opted_out(session) == [(False, True)]
    assert reply(client, twilio_settings, "START").status_code == 200
    assert _opted_out(session) == []


def _every_value(session: Session) -> str:
    parts: list[str] = []
    for table in Base.metadata.sorted_tables:
        for row in session.execute(select(table)).all():
            parts.extend(str(v) for v in row)
    session.rollback()
    return "\n".join(parts).lower()


def test_the_stop_list_keeps_no_phone_number_nor_its_unkeyed_hash(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, twilio_settings: Settings
) -> None:
    stopped = "+14155550199"  # a phone no order or customer carries
    assert reply(client, twilio_settings, "STOP", phone=stopped).status_code == 200
    everything = _every_value(session)
    assert session.execute(select(Base.metadata.tables["sms_stops"])).all() != []
    for form in (stopped, stopped.lstrip("+")):
        assert form not in everything
        assert hashlib.sha256(form.encode()).hexdigest() not in everything
    session.rollback()
    assert reply(client, twilio_settings, "START", phone=stopped).status_code == 200
    assert session.execute(select(Base.metadata.tables["sms_stops"])).all() == []


@pytest.mark.parametrize(
    ("body", "keyword"),
    [
        ("STOP", "stop"),
        ("stopall", "stop"),
        (" Unsubscribe ", "stop"),
        ("cancel", "stop"),
        ("END", "stop"),
        ("quit", "stop"),
        ("REVOKE", "stop"),
        ("optout", "stop"),
        ("start", "start"),
        ("YES", "start"),
        ("unstop", "start"),
        ("please stop", None),
        ("", None),
        ("HELP", None),
    ],
)
def test_twilios_opt_out_and_opt_in_words(body: str, keyword: str | None) -> None:
    assert reply_keyword(body) == keyword


def test_other_replies_and_odd_fields_change_nothing(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    twilio_settings: Settings,
    fake_twilio: FakeTwilio,
) -> None:
    post(client, shop.auth, order_body())
    assert reply(client, twilio_settings, "thanks!").status_code == 200
    assert reply(client, twilio_settings, "STOP", phone="not a phone").status_code == 200
    assert reply(client, twilio_settings, "STOP", phone="+1\x00").status_code == 200
    assert [r.status for r in receipts(session)] == ["pending"]
    assert session.scalars(select(OptOut)).all() == []
