"""Customers' choices (CONTRACT.md §8): opt-out and erasure, through the merchant API."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import opt_in_phone, opt_out_phone
from partnerlink.audiences.models import Suppression
from partnerlink.db.base import Base
from partnerlink.orders.conversion import identifier_hash
from partnerlink.orders.models import Order, Touch
from partnerlink.receipts.models import Receipt
from tests.audiences.helpers import add_customer, add_order
from tests.conftest import LiveServer
from tests.factories import DEFAULT_PASSWORD, ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, post


def _counts(client: Any, base: str, profile_id: str, auth: dict[str, str]) -> dict[str, int]:
    response = client.get(f"{base}/merchant/api/profiles/{profile_id}/audiences", headers=auth)
    assert response.status_code == 200, response.text
    return {a["segment"]: a["customers"] for a in response.json()["audiences"]}


def test_opt_out_by_email_or_phone(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, email="ann@example.com", phone="+14155550111")
    add_customer(session, shop.store, email="bob@example.com")
    add_customer(session, shop.store, phone="+14155550112")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/opt-out"
    assert client.post(path, json={"email": " Ann@Example.com "}, headers=owner).json() == {
        "optedOut": 1
    }
    # A national number is read in the profile's store's country (US).
    response = client.post(path, json={"phoneNumber": "(415) 555-0112"}, headers=owner)
    assert response.json() == {"optedOut": 1}
    assert _counts(client, "", shop.profile.id, owner)["all"] == 1
    export = client.get(
        f"/merchant/api/profiles/{shop.profile.id}/audiences/all/export",
        params={"format": "meta"},
        headers=owner,
    )
    assert len(export.text.strip().splitlines()) == 2  # header and bob
    assert client.post(path, json={"email": "nobody@example.com"}, headers=owner).json() == {
        "optedOut": 0
    }


def test_sms_stop_and_start_reach_every_profile_with_the_phone(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_customer(session, shop.store, phone="+14155550113")
    other = create_connected_store(session, email="other@example.com", pos_type="other-pos")
    add_customer(session, other.store, phone="+14155550113")
    assert opt_out_phone(session, "+14155550113") == 2
    session.commit()
    assert _counts(client, "", shop.profile.id, owner)["all"] == 0
    assert opt_in_phone(session, "+14155550113") == 2
    session.commit()
    assert _counts(client, "", shop.profile.id, owner)["all"] == 1


def test_neither_email_nor_phone_answers_400_and_stores_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    base = f"/merchant/api/profiles/{shop.profile.id}/customers"
    for action in ("opt-out", "erase"):
        for body in ({}, {"email": "  ", "phoneNumber": ""}):
            response = client.post(f"{base}/{action}", json=body, headers=owner)
            assert response.status_code == 400, response.text
            assert response.json()["code"] == "missing_field"
        response = client.post(f"{base}/{action}", json={"email": "not-an-email"}, headers=owner)
        assert response.status_code == 400
    response = client.post("/merchant/api/profiles/nope/customers/erase", json={"email": "a@b.co"})
    assert response.status_code == 401
    erase = client.post(f"{base}/erase", json={"email": "unknown@example.com"}, headers=owner)
    assert erase.json() == {"erased": 0}
    assert session.scalar(select(Suppression.profile_id)) is None


def test_an_erased_person_does_not_come_back_into_audiences(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    gone = add_customer(session, shop.store, email="gone@example.com", phone="+14155550114")
    add_order(session, shop.store, gone, days_ago=1)
    add_customer(session, shop.store, email="stays@example.com")
    path = f"/merchant/api/profiles/{shop.profile.id}/customers/erase"
    assert client.post(path, json={"phoneNumber": "+1 415 555 0114"}, headers=owner).json() == {
        "erased": 1
    }
    order = session.scalars(select(Order)).one()
    session.refresh(order)
    assert order.customer_id is None and order.conversion == "anonymous"
    session.commit()  # SQLite's one connection goes back to the app (commit: no expiry)
    # The same person orders again: the order creates a customer, not an audience member.
    again = order_body("A-2", customerEmail="GONE@example.com", customerPhoneNumber=None)
    assert post(client, shop.auth, again).status_code == 200
    counts = _counts(client, "", shop.profile.id, owner)
    assert counts["all"] == 1 and counts["buyers"] == 0


def _every_value(session: Session) -> str:
    """Every value of every column of every table, as one lower-cased text."""
    parts: list[str] = []
    for table in Base.metadata.sorted_tables:
        for row in session.execute(select(table)).all():
            parts.extend(json.dumps(v, default=str) for v in row)
    return "\n".join(parts).lower()


def _sent_receipts(session: Session) -> int:
    count = session.execute(text("SELECT count(*) FROM receipts WHERE status = 'sent'")).scalar()
    session.commit()
    return int(count or 0)


def _wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_erasure_leaves_nothing_personal_in_the_database_or_the_log(
    session: Session, live_server: LiveServer
) -> None:
    shop = create_connected_store(session, ereceipt=True, green_invoices=True)
    erased = {
        "email": "zebediah.quuxworth@example.com",
        "phone": "+14155550177",
        "first": "Zebediah",
        "last": "Quuxworth",
        "city": "Xylophonia",
    }
    add_customer(
        session,
        shop.store,
        email=erased["email"],
        phone=erased["phone"],
        first_name=erased["first"],
        last_name=erased["last"],
        city=erased["city"],
    )
    session.add(
        Touch(
            profile_id=shop.profile.id,
            campaign_id="spring",
            email_sha256=identifier_hash(erased["email"].lower()),
            touched_at=datetime.now(UTC),
        )
    )
    session.commit()
    http = httpx.Client(base_url=live_server.url, timeout=30)
    body = order_body(
        "Z-1",
        customerEmail="Zebediah.Quuxworth@example.com",
        customerPhoneNumber=erased["phone"],
        customerFirstName=erased["first"],
        customerLastName=erased["last"],
    )
    # The partner's free text carries the person too, in forms of its own (CONTRACT §12).
    details = body["orderDetails"]
    details["note"] = "Call ZEBEDIAH on (415) 555-0177 or zebediah.quuxworth@EXAMPLE.com"
    details["vehicle"] = {"plate": "QUUXWORTH-1", "owner": ["Zebediah Quuxworth"]}
    details["orderItems"][0]["itemName"] = "Flat white for Zebediah"
    details["orderPayments"][0]["cardHolder"] = "Z. Quuxworth, 4155550177"
    assert http.post("/v1/orders", json=body, headers=shop.auth).status_code == 200
    _wait_for(lambda: _sent_receipts(session) == 1)
    signed_in = http.post(
        "/merchant/api/sessions", json={"email": "owner@example.com", "password": DEFAULT_PASSWORD}
    )
    owner = {"Authorization": f"Bearer {signed_in.json()['sessionToken']}"}
    response = http.post(
        f"/merchant/api/profiles/{shop.profile.id}/customers/erase",
        json={"email": erased["email"]},
        headers=owner,
    )
    assert response.json() == {"erased": 1}
    session.commit()
    everything = _every_value(session)
    for value in erased.values():
        assert value.lower() not in everything, value
    assert "4155550177" not in everything
    order = session.scalars(select(Order)).one()
    assert order.customer_id is None and order.conversion == "anonymous"
    assert session.scalars(select(Receipt.to_phone)).one() is None
    assert session.scalar(select(Touch.id)) is None
    # Only keyed digests are kept: never the unkeyed SHA-256 of the email or the phone.
    for value in (erased["email"], erased["phone"], erased["phone"].lstrip("+")):
        assert hashlib.sha256(value.encode()).hexdigest() not in everything, value
    assert len(set(session.scalars(select(Suppression.identifier_digest)))) == 2
    stored = session.scalars(select(Order.details)).one()
    assert stored["note"] == "Call [erased] on [erased] or [erased]"
    assert stored["vehicle"] == {"plate": "[erased]-1", "owner": ["[erased] [erased]"]}
    assert stored["orderItems"][0]["itemName"] == "Flat white for [erased]"
    assert stored["orderPayments"][0]["cardHolder"] == "Z. [erased], [erased]"
    log = live_server.logs().lower()
    for value in erased.values():
        assert value.lower() not in log, value
    assert "4155550177" not in log
