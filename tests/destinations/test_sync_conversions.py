"""Conversions destinations end to end against the local Meta and Google servers
(CONTRACT §11): each eligible order once with a stable id; the platform's failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.db.base import utcnow
from partnerlink.destinations.models import Destination
from partnerlink.kit.digests import sha256_hex
from partnerlink.orders.models import Order
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    google_audience,
    google_conversions,
    google_credentials,
    meta_audience,
    meta_conversions,
    run_worker,
)
from tests.factories import ConnectedStoreFixture, connect_another_partner, create_store


def _order(
    session: Session,
    store: Store,
    customer: Customer | None,
    *,
    partner_id: str,
    order_id: str,
    days_ago: float = 1,
    status: str = "CLOSED",
    email: str | None = None,
    price: int = 1250,
    currency: str = "USD",
) -> Order:
    order = Order(
        store_id=store.id,
        profile_id=store.profile_id,
        partner_id=partner_id,
        order_id=order_id,
        order_price=price,
        order_currency=currency,
        order_status=status,
        ordered_at=datetime.now(UTC) - timedelta(days=days_ago),
        customer_id=customer.id if customer else None,
        customer_email=email or (customer.email if customer else None),
        customer_phone_number=customer.phone_number if customer else None,
        details={},
        conversion="organic",
    )
    session.add(order)
    session.commit()
    return order


def _meta_events(meta: FakeMeta) -> list[dict[str, Any]]:
    return list(meta.datasets[fake_meta.DATASET_ID])


def test_meta_conversions_each_eligible_order_once_with_stable_distinct_ids(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, _google = servers
    partner = shop.partner.partner.id
    other = connect_another_partner(session, shop).partner.partner.id
    buyer = add_customer(session, shop.store, email="buyer@example.com", first_name="Bea")
    phone_only = add_customer(session, shop.store, phone="+16505551234", country_code=None)
    test_store = create_store(session, shop.profile, name="Test till")
    session.execute(update(Store).where(Store.id == test_store.id).values(is_test=True))
    session.commit()
    _order(session, shop.store, buyer, partner_id=partner, order_id="1001", days_ago=70)
    _order(session, shop.store, buyer, partner_id=partner, order_id="1002", status="OPEN")
    _order(session, shop.store, None, partner_id=partner, order_id="1003")  # no email or phone
    _order(session, test_store, buyer, partner_id=partner, order_id="1004")
    sent = [
        _order(session, shop.store, buyer, partner_id=partner, order_id="42"),
        _order(session, shop.store, buyer, partner_id=other, order_id="42", status="closed"),
        _order(session, shop.store, phone_only, partner_id=partner, order_id="43", price=1999),
    ]
    created = api.create(meta_conversions())
    run_worker(app, worker_settings)

    events = _meta_events(meta)
    assert sorted(e["custom_data"]["order_id"] for e in events) == ["42", "42", "43"]
    ids = [e["event_id"] for e in events]
    assert len(set(ids)) == 3
    phone_event = next(e for e in events if e["custom_data"]["order_id"] == "43")
    assert phone_event["custom_data"] == {"value": 19.99, "currency": "USD", "order_id": "43"}
    assert set(phone_event["user_data"]) == {"ph", "country"}  # the store's country
    assert phone_event["event_time"] == int(sent[2].ordered_at.timestamp())
    state = api.get(created["id"])
    assert state["status"] == "active"
    assert state["sent"] == {"added": 0, "removed": 0, "events": 3, "rejected": 0}
    assert state["members"] is None

    # A second sync sends only the new order; a 429 with Retry-After is waited for.
    _order(session, shop.store, buyer, partner_id=partner, order_id="44")
    meta.rate_limit_next(retry_after="120", status=429)
    api.sync(created["id"])
    run_worker(app, worker_settings)
    waiting = api.get(created["id"])
    assert waiting["status"] == "active"
    assert waiting["lastError"]["code"] == "platform_unavailable"
    assert waiting["sent"]["events"] == 3
    row = session.scalar(select(Destination).where(Destination.id == created["id"]))
    assert row is not None and row.next_attempt_at is not None
    assert row.next_attempt_at >= utcnow() + timedelta(seconds=110)
    session.rollback()
    assert run_worker(app, worker_settings) == 0  # not before its Retry-After
    api.sync(created["id"])
    run_worker(app, worker_settings)
    assert [e["custom_data"]["order_id"] for e in _meta_events(meta)][3:] == ["44"]
    after = api.get(created["id"])
    assert after["sent"]["events"] == 4 and after["lastError"] is None
    # The ids are the same on every attempt: a refused order's id is the one sent before.
    assert _meta_events(meta)[0]["event_id"] == ids[0]


def test_google_conversions_and_a_refused_row_counted_as_rejected(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    _meta, google = servers
    partner = shop.partner.partner.id
    good = add_customer(session, shop.store, email="good@example.com")
    bad = add_customer(session, shop.store, email="bad@example.com")
    _order(session, shop.store, good, partner_id=partner, order_id="1", currency="JPY", price=1500)
    _order(session, shop.store, bad, partner_id=partner, order_id="2")
    google.refuse_identifier(sha256_hex("bad@example.com"))
    created = api.create(google_conversions())
    run_worker(app, worker_settings)
    events = google.events[google_conversions()["target"]["conversionActionId"]]
    assert [e["conversionValue"] for e in events] == [1500]
    assert events[0]["eventSource"] == "IN_STORE" and events[0]["currency"] == "JPY"
    assert events[0]["eventTimestamp"].endswith("Z")
    state = api.get(created["id"])
    assert state["sent"]["events"] == 1 and state["sent"]["rejected"] == 1
    assert state["lastReport"]["requestId"]


def test_refused_credentials_need_attention_until_new_ones(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, google = servers
    add_customer(session, shop.store, email="someone@example.com")
    google_destination = api.create(google_audience())
    meta_destination = api.create(meta_audience())
    google.revoke_refresh_token()
    meta.expired_token_next()
    run_worker(app, worker_settings)
    for created, secret in (
        (google_destination, google_credentials()["refreshToken"]),
        (meta_destination, fake_meta.ACCESS_TOKEN),
    ):
        state = api.get(created["id"])
        assert state["status"] == "needs_attention"
        assert state["lastError"]["code"] == "credentials_refused"
        assert secret not in state["lastError"]["message"]
        assert "new" in state["lastError"]["message"]
    # No more calls while it waits, even when its time would come.
    session.execute(update(Destination).values(next_attempt_at=utcnow() - timedelta(hours=1)))
    session.commit()
    calls = len(google.requests)
    assert run_worker(app, worker_settings) == 0
    assert len(google.requests) == calls

    google.refresh_tokens.add("1//0g-new-refresh-token")
    patched = api.patch(
        google_destination["id"], {"credentials": google_credentials("1//0g-new-refresh-token")}
    )
    assert patched["status"] == "pending" and patched["lastError"] is None
    run_worker(app, worker_settings)
    assert api.get(google_destination["id"])["status"] == "active"
    assert len(google.members()) == 1
    # A sync request retries the Meta one with its old (now accepted again) token.
    api.sync(meta_destination["id"])
    run_worker(app, worker_settings)
    assert api.get(meta_destination["id"])["status"] == "active"


@pytest.mark.parametrize("failure", ["garbage", "hang", "refused"])
def test_a_broken_platform_is_recorded_while_another_destination_syncs(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
    failure: str,
) -> None:
    meta, _google = servers
    add_customer(session, shop.store, email="one@example.com")
    meta_destination = api.create(meta_audience())
    google_destination = api.create(google_audience())
    settings = worker_settings
    if failure == "garbage":
        meta.garbage_next(status=200)
    elif failure == "hang":
        meta.hang_next(seconds=10)
    else:  # nothing listens at the Meta address
        settings = worker_settings.model_copy(update={"meta_graph_url": "http://127.0.0.1:9"})
    run_worker(app, settings)
    broken = api.get(meta_destination["id"])
    assert broken["status"] == "pending"
    assert broken["lastError"]["code"] == "platform_unavailable"
    assert broken["members"] == 0
    working = api.get(google_destination["id"])
    assert working["status"] == "active" and working["members"] == 1
    assert meta.audiences[fake_meta.AUDIENCE_ID] == set()
