"""Meta's throttling header is honoured like Retry-After (CONTRACT §15): a call refused
with `X-Business-Use-Case-Usage` naming `estimated_time_to_regain_access` (minutes) is
tried again no sooner, and nothing is dropped meanwhile."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import meta as meta_protocol
from partnerlink.destinations.meta import MetaClient
from partnerlink.destinations.models import Destination
from partnerlink.destinations.platform import PlatformError
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import AUDIENCE_ID, DATASET_ID, FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    customer_row,
    meta_audience,
    meta_conversions,
    run_worker,
)
from tests.destinations.test_meta_protocol import _event, _row
from tests.destinations.test_sync_conversions import _order
from tests.factories import ConnectedStoreFixture

FORTY_FIVE_MINUTES = 45 * 60.0


def _refused(meta_client: MetaClient) -> PlatformError:
    with pytest.raises(PlatformError) as caught:
        meta_client.add_users(AUDIENCE_ID, [_row(1)])
    return caught.value


def test_the_longest_regain_access_of_any_use_case_is_the_wait(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.throttle_next(45)
    error = _refused(meta_client)
    assert error.kind == "retry" and error.retry_after == FORTY_FIVE_MINUTES
    # Events too, with the code Meta gives a throttled app or user (17).
    fake_meta_server.throttle_next(3, code=17)
    with pytest.raises(PlatformError) as caught:
        meta_client.send_events(DATASET_ID, [_event(1)])
    assert caught.value.kind == "retry" and caught.value.retry_after == 180.0


def test_the_longer_of_retry_after_and_the_header(
    fake_meta_server: FakeMeta, meta_client: MetaClient
) -> None:
    fake_meta_server.throttle_next(2, retry_after="600")
    assert _refused(meta_client).retry_after == 600.0
    fake_meta_server.throttle_next(20, retry_after="600", status=429)
    assert _refused(meta_client).retry_after == 1200.0
    fake_meta_server.throttle_next(0, retry_after="7")
    assert _refused(meta_client).retry_after == 7.0
    # A wait beyond a day is believed for a day.
    fake_meta_server.throttle_next(10**9)
    assert _refused(meta_client).retry_after == 86_400.0


@pytest.mark.parametrize(
    "usage",
    [
        "not json",
        "[45]",
        '{"1": 45}',
        '{"1": [{"estimated_time_to_regain_access": "soon"}]}',
        '{"1": [{"estimated_time_to_regain_access": -5}]}',
        '{"1": [{"estimated_time_to_regain_access": NaN}]}',
        '{"1": [{"estimated_time_to_regain_access": true}]}',
        '{"1": [{"estimated_time_to_regain_access": null}, 7]}',
        "[" * 50_000,
    ],
)
def test_a_malformed_header_is_ignored(
    fake_meta_server: FakeMeta, meta_client: MetaClient, usage: str
) -> None:
    fake_meta_server.throttle_next(45, retry_after="7", usage=usage)
    error = _refused(meta_client)
    assert error.kind == "retry" and error.retry_after == 7.0
    fake_meta_server.throttle_next(45, usage=usage)
    assert _refused(meta_client).retry_after is None


def _waits_45_minutes(session: Session, destination_id: str) -> None:
    status, next_attempt_at = session.execute(
        select(Destination.status, Destination.next_attempt_at).where(
            Destination.id == destination_id
        )
    ).one()
    session.rollback()  # the connection back to the pool, for the worker
    assert next_attempt_at is not None
    wait = (next_attempt_at - utcnow()).total_seconds()
    assert FORTY_FIVE_MINUTES - 30 < wait <= FORTY_FIVE_MINUTES
    assert status == "active"  # a platform's wait is no fault of the merchant


def _time_passes(session: Session, destination_id: str) -> None:
    session.execute(
        update(Destination)
        .where(Destination.id == destination_id)
        .values(next_attempt_at=utcnow() - timedelta(seconds=1))
    )
    session.commit()


def test_a_throttled_conversions_sync_waits_then_sends_the_rest(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    meta, _google = servers
    partner = shop.partner.partner.id
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    _order(session, shop.store, buyer, partner_id=partner, order_id="100")
    created = api.create(meta_conversions())
    run_worker(app, worker_settings)
    assert api.get(created["id"])["status"] == "active"

    monkeypatch.setattr(meta_protocol, "MAX_EVENTS", 2)  # three requests for five orders
    for number in range(1, 6):
        _order(session, shop.store, buyer, partner_id=partner, order_id=f"{100 + number}")
    meta.answer_next(200, {"events_received": 2, "messages": [], "fbtrace_id": "A1"})
    meta.throttle_next(45)  # the second request
    api.sync(created["id"])
    run_worker(app, worker_settings)

    _waits_45_minutes(session, created["id"])
    state = api.get(created["id"])
    assert state["lastError"]["code"] == "platform_unavailable"
    assert state["sent"]["events"] == 3
    assert run_worker(app, worker_settings) == 0  # not before Meta said

    _time_passes(session, created["id"])
    run_worker(app, worker_settings)
    order_ids = [e["custom_data"]["order_id"] for e in meta.datasets[DATASET_ID]]
    assert order_ids == ["100", "103", "104", "105"]  # 101 and 102: the scripted answer
    state = api.get(created["id"])
    assert state["status"] == "active"
    assert state["sent"]["events"] == 6 and state["lastError"] is None


def test_a_throttled_audience_sync_waits_then_adds_everyone(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    meta, _google = servers
    people = [add_customer(session, shop.store, email="p0@example.com")]
    created = api.create(meta_audience())
    run_worker(app, worker_settings)
    people += [add_customer(session, shop.store, email=f"p{n}@example.com") for n in (1, 2)]
    rows = {customer_row(person) for person in people}
    session.rollback()
    meta.throttle_next(45, retry_after="20")
    api.sync(created["id"])
    run_worker(app, worker_settings)

    _waits_45_minutes(session, created["id"])
    assert api.get(created["id"])["sent"]["added"] == 1
    _time_passes(session, created["id"])
    run_worker(app, worker_settings)
    assert meta.audiences[AUDIENCE_ID] == rows
    state = api.get(created["id"])
    assert state["status"] == "active" and state["sent"]["added"] == 3
