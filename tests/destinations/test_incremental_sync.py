"""Incremental audience syncs (CONTRACT §11): once a destination's members were all
compared, a sync reads and hashes only the members the database finds new, changed
or gone. Every change §11 lists must still reach the platform, whichever way it was
made: an identifier changed by plain SQL (no `updated_at` touched), an email gained,
an opt-out and its lifting, a STOP, an erasure, a customer turned test-store-only, a
segment or campaign PATCHed (the control group of the campaign), and the time-based
segments, whose members move while nothing is written at all."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.audiences import service as audience_service
from partnerlink.audiences.hashing import CustomerRow
from partnerlink.db.base import utcnow
from partnerlink.destinations.models import DestinationMember
from partnerlink.destinations.sync import senders
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer, add_order
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    add_cast,
    change_the_cast,
    google_audience,
    held_row,
    lift_opt_out,
    meta_audience,
    run_sql,
    run_worker,
)
from tests.factories import ConnectedStoreFixture, create_store

Servers = tuple[FakeMeta, FakeGoogle]


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many customers each sync turned into Meta rows (one entry a sync)."""
    counts: list[int] = []
    real = senders.MetaAudience.row

    def counting(self: senders.MetaAudience, customer: CustomerRow) -> str:
        counts[-1] += 1
        return real(self, customer)

    monkeypatch.setattr(senders.MetaAudience, "row", counting)
    return counts


def _sync(
    app: FastAPI, settings: Settings, api: Destinations, destination_id: str, hashed: list[int]
) -> None:
    hashed.append(0)
    api.sync(destination_id)
    run_worker(app, settings)


def test_incremental_sync_hashes_only_what_changed_and_misses_no_change(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    client: TestClient,
    owner: dict[str, str],
    hashed: list[int],
) -> None:
    meta, _google = servers
    held = meta.audiences[fake_meta.AUDIENCE_ID]
    store = shop.store
    cast = add_cast(session, store)
    hyphen_id = add_customer(session, store, email="ma@example.com", first_name="Mary-Ann").id
    tester = add_customer(session, store, email="tester@example.com")
    ids = cast.members | {hyphen_id, tester.id}
    test_store = create_store(session, shop.profile, name="Sandbox till")
    session.execute(update(Store).where(Store.id == test_store.id).values(is_test=True))
    session.commit()
    profile_id, partner_id = shop.profile.id, shop.partner.partner.id
    left = {cast.opted, cast.stopped, tester.id, cast.erased}
    session.rollback()  # the SQLite test database has one connection: give it back
    created = api.create(meta_audience())["id"]
    _sync(app, worker_settings, api, created, hashed)
    assert hashed == [len(ids)]
    assert held == {held_row(session, i) for i in ids}
    old_mover, old_opted, old_stopped, old_tester, old_erased = (
        held_row(session, i) for i in (cast.mover, cast.opted, cast.stopped, tester.id, cast.erased)
    )

    # Nothing changed: nothing is hashed, nothing sent.
    calls = len(meta.requests)
    _sync(app, worker_settings, api, created, hashed)
    assert hashed[-1] == 0 and len(meta.requests) == calls

    # Changes made behind the application's back (no updated_at moves), and through it.
    change_the_cast(session, client, owner, profile_id, cast)
    run_sql(session, "UPDATE customers SET first_name = 'Mary Ann' WHERE id = :i", i=hyphen_id)
    add_order(session, test_store, tester, days_ago=1, partner_id=partner_id)
    newcomer = add_customer(session, store, email="new@example.com")
    removed_before = api.get(created)["sent"]["removed"]

    _sync(app, worker_settings, api, created, hashed)
    newcomer_id = newcomer.id
    session.rollback()
    members = ids - left | {cast.nameless, newcomer_id}
    assert held == {held_row(session, i) for i in members}
    for gone in (old_mover, old_opted, old_stopped, old_tester, old_erased):
        assert gone not in held
    # Hashed: the changed phone, the gained email, the renamed (same row), the newcomer.
    assert hashed[-1] == 4
    shown = api.get(created)
    assert shown["members"] == len(members)
    assert shown["sent"]["removed"] - removed_before == 5

    # The renamed customer's row did not change: no call for it, and its new fingerprint
    # is recorded, so the next sync reads nothing again.
    calls = len(meta.requests)
    _sync(app, worker_settings, api, created, hashed)
    assert hashed[-1] == 0 and len(meta.requests) == calls

    # The merchant lifts its opt-out: the customer comes back.
    lift_opt_out(client, owner, profile_id)
    _sync(app, worker_settings, api, created, hashed)
    assert old_opted in held and hashed[-1] == 1


def test_a_patched_campaign_or_segment_compares_every_member_again(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    client: TestClient,
    owner: dict[str, str],
    hashed: list[int],
) -> None:
    meta, _google = servers
    held = meta.audiences[fake_meta.AUDIENCE_ID]
    campaign = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/campaigns",
        json={
            "campaignId": "spring",
            "name": "Spring",
            "startsAt": (utcnow() - timedelta(days=10)).isoformat(),
            "holdoutPercent": 50,
        },
        headers=owner,
    )
    assert campaign.status_code == 200, campaign.text
    people = [add_customer(session, shop.store, email=f"p{i}@example.com") for i in range(30)]
    buyers = people[:4]
    for buyer in buyers:
        add_order(session, shop.store, buyer, days_ago=3)
    everyone = {held_row(session, p.id) for p in people}
    created = api.create(meta_audience())["id"]
    _sync(app, worker_settings, api, created, hashed)
    assert held == everyone

    # The campaign's control group leaves, though none of its customers changed.
    api.patch(created, {"campaignId": "spring"})
    _sync(app, worker_settings, api, created, hashed)
    kept = set(
        session.scalars(
            select(DestinationMember.customer_id).where(DestinationMember.destination_id == created)
        )
    )
    session.rollback()
    assert 0 < len(kept) < len(people)
    assert held == {held_row(session, i) for i in kept}
    assert hashed[-1] == len(kept)  # every member compared once more (but the control group)
    _sync(app, worker_settings, api, created, hashed)
    assert hashed[-1] == 0  # then only changes again

    api.patch(created, {"campaignId": None})
    _sync(app, worker_settings, api, created, hashed)
    assert held == everyone

    api.patch(created, {"segment": "buyers"})
    _sync(app, worker_settings, api, created, hashed)
    assert held == {held_row(session, b.id) for b in buyers}
    assert api.get(created)["members"] == len(buyers)


def test_time_based_segments_move_with_nothing_written(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    hashed: list[int],
) -> None:
    meta, _google = servers
    lapsed_audience = "777"
    meta.audiences[lapsed_audience] = set()
    fresh = add_customer(session, shop.store, email="fresh@example.com")
    add_order(session, shop.store, fresh, days_ago=29)  # `new` for one more day
    regular = add_customer(session, shop.store, email="regular@example.com")
    add_order(session, shop.store, regular, days_ago=90)
    add_order(session, shop.store, regular, days_ago=59)  # `lapsed` from tomorrow on
    new = api.create(meta_audience("new"))["id"]
    lapsed = api.create(meta_audience("lapsed", audience_id=lapsed_audience))["id"]
    _sync(app, worker_settings, api, new, hashed)
    _sync(app, worker_settings, api, lapsed, hashed)
    assert meta.audiences[fake_meta.AUDIENCE_ID] == {held_row(session, fresh.id)}
    assert meta.audiences[lapsed_audience] == set()

    later: Callable[[], object] = lambda: utcnow() + timedelta(days=2)  # noqa: E731
    monkeypatch.setattr(audience_service, "utcnow", later)
    _sync(app, worker_settings, api, new, hashed)
    _sync(app, worker_settings, api, lapsed, hashed)
    assert meta.audiences[fake_meta.AUDIENCE_ID] == set()
    assert meta.audiences[lapsed_audience] == {held_row(session, regular.id)}
    assert api.get(new)["members"] == 0 and api.get(lapsed)["members"] == 1


def test_google_sees_a_changed_postal_code_which_meta_does_not_send(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
) -> None:
    _meta, google = servers
    lou = add_customer(
        session,
        shop.store,
        phone="+16505552222",
        first_name="Lou",
        last_name="Reed",
        postal_code="94105",
    )
    created = api.create(google_audience())["id"]
    api.sync(created)
    run_worker(app, worker_settings)
    run_sql(session, "UPDATE customers SET postal_code = '10001' WHERE id = :i", i=lou.id)
    api.sync(created)
    run_worker(app, worker_settings)
    postal_codes = [
        i["address"]["postalCode"]
        for m in google.members()
        for i in m["userIdentifiers"]
        if "address" in i
    ]
    assert postal_codes == ["10001"]
    assert api.get(created)["sent"]["removed"] == 1
