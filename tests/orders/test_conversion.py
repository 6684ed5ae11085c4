"""Conversion classes (CONTRACT.md §6): anonymous, organic, new, returning; a function of the data."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.measurement.service import import_touch_lines
from tests.factories import ConnectedStoreFixture, create_profile
from tests.orders.builders import order_body, post, stored_order

ORDER_TIME = "2024-05-10T12:00:00Z"


def touch(
    session: Session, profile_id: str, touched_at: str, default_click_days: int = 7, **who: Any
) -> None:
    line = json.dumps(
        {"profileId": profile_id, "campaignId": "spring", "touchedAt": touched_at, **who}
    )
    result = import_touch_lines(session, [line.encode()], default_click_days=default_click_days)
    session.commit()
    assert result.imported == 1, result.rejections


def send(client: TestClient, shop: ConnectedStoreFixture, order_id: str, **fields: Any) -> None:
    body = order_body(order_id, **{"createdAt": ORDER_TIME, **fields})
    assert post(client, shop.auth, body).status_code == 200


def conversion_of(session: Session, order_id: str) -> str:
    return stored_order(session, order_id).conversion


def test_order_without_usable_email_or_phone_is_anonymous(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "1", customerEmail=None, customerPhoneNumber=None)
    send(client, shop, "2", customerEmail="nobody-at-example", customerPhoneNumber="x")
    assert conversion_of(session, "1") == conversion_of(session, "2") == "anonymous"


def test_customer_without_touch_is_organic(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "1")
    assert conversion_of(session, "1") == "organic"


def test_touched_customer_without_earlier_order_is_new(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    touch(session, shop.profile.id, "2024-05-08T09:00:00Z", email="ADA@example.com")
    send(client, shop, "1")
    assert conversion_of(session, "1") == "new"


def test_touched_customer_with_earlier_order_is_returning(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "0", createdAt="2024-04-01T12:00:00Z")  # before any campaign: organic
    touch(session, shop.profile.id, "2024-05-08T09:00:00Z", email="ada@example.com")
    send(client, shop, "1")
    assert conversion_of(session, "0") == "organic"
    assert conversion_of(session, "1") == "returning"


def test_touch_matches_by_phone_read_in_its_country(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    touch(
        session,
        shop.profile.id,
        "2024-05-09T09:00:00Z",
        phoneNumber="415 555 0123",
        countryCode="US",
    )
    send(client, shop, "1", customerEmail=None)
    assert conversion_of(session, "1") == "new"


def test_touch_matches_the_customer_by_its_stored_phone_too(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "0", createdAt="2024-01-01T00:00:00Z")  # customer known with email+phone
    touch(session, shop.profile.id, "2024-05-09T09:00:00Z", phoneNumber="+14155550123")
    send(client, shop, "1", customerPhoneNumber=None)  # the order carries only the email
    assert conversion_of(session, "1") == "returning"


@pytest.mark.parametrize(
    ("touched_at", "expected"),
    [
        ("2024-05-03T12:00:00Z", "new"),  # exactly 7 days before
        ("2024-05-03T11:59:59Z", "organic"),  # just outside the window
        ("2024-05-10T12:00:00Z", "new"),  # at the moment of the order
        ("2024-05-10T12:00:01Z", "organic"),  # after the order
    ],
)
def test_attribution_window_is_seven_days_before_the_order(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    touched_at: str,
    expected: str,
) -> None:
    touch(session, shop.profile.id, touched_at, email="ada@example.com")
    send(client, shop, "1")
    assert conversion_of(session, "1") == expected


def test_touch_of_another_profile_does_not_count(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    other = create_profile(session, shop.merchant, name="Other business")
    touch(session, other.id, "2024-05-09T09:00:00Z", email="ada@example.com")
    send(client, shop, "1")
    assert conversion_of(session, "1") == "organic"


def test_a_touch_imported_after_the_order_reclassifies_it(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    send(client, shop, "1")
    assert conversion_of(session, "1") == "organic"
    session.rollback()
    touch(session, shop.profile.id, "2024-05-09T09:00:00Z", email="ada@example.com")
    order = stored_order(session, "1")
    assert (order.conversion, order.campaign_id) == ("new", "spring")
    session.rollback()
    send(client, shop, "1", orderPrice="9900", updatedAt="2024-05-10T13:00:00Z")
    order = stored_order(session, "1")
    assert (order.conversion, order.order_price) == ("new", 9900)


def test_a_campaign_a_touch_creates_takes_the_settings_window(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    """PARTNERLINK_ATTRIBUTION_WINDOW_DAYS is the click window of new campaigns (§16)."""
    touch(session, shop.profile.id, "2024-04-15T12:00:00Z", 30, email="ada@example.com")
    send(client, shop, "1")
    assert conversion_of(session, "1") == "new"
