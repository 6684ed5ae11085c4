"""The e-receipt issuing rule (SPEC.md): three conditions, checked whenever an order is stored;
one receipt (one SMS) per order, ever."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import PHONE, order_body, post, receipts, with_status

LINK = re.compile(r"^http://testserver/receipts/inv/A-1001\?k=([A-Za-z0-9_-]{22})$")


def test_closed_order_with_phone_in_a_receipts_store_queues_one_receipt(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    assert post(client, shop.auth, order_body()).status_code == 200
    [receipt] = receipts(session)
    assert receipt.status == "pending" and receipt.to_phone == PHONE
    match = LINK.match(receipt.link)
    assert match, receipt.link
    key = match.group(1)
    assert receipt.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert "Bistro Central" in receipt.body and receipt.link in receipt.body


def test_resending_the_order_never_queues_a_second_receipt(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for n in range(3):
        post(client, shop.auth, order_body(updatedAt=f"2024-05-01T13:0{n}:00Z"))
    assert len(receipts(session)) == 1


def test_receipt_goes_at_the_closed_update_of_an_open_order(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, with_status(order_body(updatedAt="2024-05-01T12:00:00Z"), "OPEN"))
    assert receipts(session) == []
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:30:00Z"))
    assert len(receipts(session)) == 1


def test_stale_closed_update_is_not_applied_and_queues_nothing(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, with_status(order_body(updatedAt="2024-05-01T13:00:00Z"), "OPEN"))
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:00:00Z"))
    assert receipts(session) == []


def test_no_receipt_when_any_condition_fails(client: TestClient, session: Session) -> None:
    off = create_connected_store(session, green_invoices=False)
    post(client, off.auth, order_body("off"))
    on = create_connected_store(
        session, green_invoices=True, email="on@example.com", pos_type="on-pos"
    )
    post(client, on.auth, with_status(order_body("open"), "OPEN"))
    post(client, on.auth, with_status(order_body("closing"), "closing"))
    post(client, on.auth, order_body("no-phone", customerPhoneNumber=None))
    post(client, on.auth, order_body("blank-phone", customerPhoneNumber="  "))
    post(client, on.auth, order_body("no-details", orderDetails=None))
    assert receipts(session) == []


def test_closed_counts_in_any_letter_case_and_is_stored_as_sent(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    for status in ("closed", "Closed", "cLoSeD"):
        assert post(client, shop.auth, with_status(order_body(status), status)).status_code == 200
    assert len(receipts(session)) == 3
    for status in ("closed", "Closed", "cLoSeD"):
        answer = client.get("/v1/orders", params={"orderId": status}, headers=shop.auth)
        assert answer.status_code == 200, answer.text
        assert answer.json()["orderStatus"] == status
        assert answer.json()["orderDetails"]["orderStatus"] == status


def test_receipt_follows_green_invoices_at_the_time_the_order_is_stored(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session, green_invoices=False)
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:00:00Z"))
    session.execute(update(Store).values(green_invoices=True))
    session.commit()
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:05:00Z"))
    assert len(receipts(session)) == 1


def test_unusable_phone_queues_no_receipt(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body(customerPhoneNumber="12"))
    assert receipts(session) == []


def test_phone_is_normalized_to_e164_in_the_stores_country(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session, green_invoices=True, country_code="DE", currency="EUR")
    post(client, shop.auth, order_body(customerPhoneNumber="030 1234567"))
    assert receipts(session)[0].to_phone == "+49301234567"


def test_order_id_is_escaped_in_the_link(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body("T 1/2?#é"))
    link = receipts(session)[0].link
    assert link.startswith("http://testserver/receipts/inv/T%201%2F2%3F%23%C3%A9?k=")


def test_receipt_url_setting_gives_the_older_connect_form(
    client: TestClient, shop: ConnectedStoreFixture, session: Session, app: Any
) -> None:
    app.state.settings.receipt_url = "http://testserver/connect"
    post(client, shop.auth, order_body())
    link = receipts(session)[0].link
    assert link.startswith("http://testserver/connect/inv/A-1001?k=")
    assert client.get(link).status_code == 200
