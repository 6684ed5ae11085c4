"""A refund or a zero-value order is never sent as a purchase (CONTRACT §15): only CLOSED
orders with `orderPrice` above zero reach Meta or Google, and only they count in
`sent.events`."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.destinations.models import DestinationConversion
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    google_conversions,
    meta_conversions,
    run_worker,
)
from tests.destinations.test_sync_conversions import _order
from tests.factories import ConnectedStoreFixture


def test_refunds_and_zero_value_orders_reach_neither_platform(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, google = servers
    partner = shop.partner.partner.id
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    _order(session, shop.store, buyer, partner_id=partner, order_id="refund-1", price=-1250)
    _order(session, shop.store, buyer, partner_id=partner, order_id="free-1", price=0)
    _order(session, shop.store, buyer, partner_id=partner, order_id="sale-1", price=1250)
    _order(session, shop.store, buyer, partner_id=partner, order_id="sale-2", price=1)
    to_meta = api.create(meta_conversions())
    to_google = api.create(google_conversions())
    run_worker(app, worker_settings)

    meta_events = meta.datasets[fake_meta.DATASET_ID]
    assert sorted(e["custom_data"]["order_id"] for e in meta_events) == ["sale-1", "sale-2"]
    assert sorted(e["custom_data"]["value"] for e in meta_events) == [0.01, 12.5]
    google_events = google.events[google_conversions()["target"]["conversionActionId"]]
    assert sorted(e["conversionValue"] for e in google_events) == [0.01, 12.5]
    for created in (to_meta, to_google):
        state = api.get(created["id"])
        assert state["status"] == "active"
        assert state["sent"] == {"added": 0, "removed": 0, "events": 2, "rejected": 0}

    # Nor on a later sync: a refund is no purchase however often the orders are read, and
    # a later sale is sent alone.
    _order(session, shop.store, buyer, partner_id=partner, order_id="refund-2", price=-1)
    _order(session, shop.store, buyer, partner_id=partner, order_id="sale-3", price=999)
    for created in (to_meta, to_google):
        api.sync(created["id"])
    run_worker(app, worker_settings)
    assert [e["custom_data"]["order_id"] for e in meta_events][2:] == ["sale-3"]
    assert [e["conversionValue"] for e in google_events][2:] == [9.99]
    for created in (to_meta, to_google):
        assert api.get(created["id"])["sent"]["events"] == 3
    recorded = session.scalar(select(func.count()).select_from(DestinationConversion))
    assert recorded == 6  # three orders for each destination, no refund among them
