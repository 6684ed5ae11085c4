"""Ad syncs over the largest amounts (CONTRACT §12, added 2026-11-29): a `top` audience of
spends beyond a 64-bit integer syncs its members, orders at the largest amount an order may
carry are sent at their exact value, and a sync that fails says that it failed."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync import engine
from partnerlink.destinations.web import state_in_words
from partnerlink.settings import Settings
from tests.audiences.big_spenders import CEILING, big_spenders
from tests.audiences.helpers import add_customer, add_order
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    customer_row,
    meta_audience,
    meta_conversions,
    run_worker,
)
from tests.factories import ConnectedStoreFixture


def test_a_top_audience_of_spends_beyond_a_bigint_syncs(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, _google = servers
    spenders = big_spenders(session, shop)
    created = api.create(meta_audience("top"))
    assert run_worker(app, worker_settings) == 1
    state = api.get(created["id"])
    assert state["status"] == "active" and state["lastError"] is None, state
    assert state["members"] == 1
    assert meta.audiences[fake_meta.AUDIENCE_ID] == {customer_row(spenders.larger)}


def test_orders_at_the_ceiling_are_sent_at_their_exact_value(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, _google = servers
    buyer = add_customer(session, shop.store, email="max@example.com")
    for currency in ("USD", "JPY"):  # two minor units, and none
        for _ in range(6):
            add_order(
                session,
                shop.store,
                buyer,
                days_ago=1,
                price=CEILING,
                currency=currency,
                status="CLOSED",
            )
    created = api.create(meta_conversions())
    run_worker(app, worker_settings)
    assert api.get(created["id"])["sent"]["events"] == 12
    values = {
        (e["custom_data"]["currency"], e["custom_data"]["value"])
        for e in meta.datasets[fake_meta.DATASET_ID]
    }
    assert values == {("USD", 9_999_999_999_999.99), ("JPY", CEILING)}


def test_a_sync_that_fails_says_that_it_failed(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    worker_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a failure of our own")

    monkeypatch.setattr(engine, "sync_audience", failing)
    add_customer(session, shop.store, email="ada@example.com")
    created = api.create(meta_audience("top"))
    for _attempt in range(2):
        api.sync(created["id"])
        run_worker(app, worker_settings)
        error = api.get(created["id"])["lastError"]
        assert error["code"] == "sync_failed"
        assert "failed" in error["message"] and "Nothing to do" not in error["message"]
    destination = session.scalar(select(Destination).where(Destination.id == created["id"]))
    assert destination is not None
    words = state_in_words(destination)
    session.rollback()
    assert words == error["message"] and "could not be reached" not in words
