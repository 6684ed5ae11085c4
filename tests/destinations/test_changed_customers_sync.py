"""Incremental syncs of the `all` segment read only the customers changed since the last
comparison (migration 0030's change numbers, kept by the database itself): every change
§11 lists still reaches the platform within one sync, whichever way it was written
(plain SQL included), and nothing else is read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import opt_in_phone
from partnerlink.customers import change_numbers
from partnerlink.destinations.sync import members as members_sql
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer, add_order
from tests.conftest import ON_POSTGRES
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    add_cast,
    change_the_cast,
    held_row,
    lift_opt_out,
    meta_audience,
    run_sql,
    run_worker,
)
from tests.factories import ConnectedStoreFixture

Servers = tuple[FakeMeta, FakeGoogle]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[list[int] | None]:
    """The customers each read of member_changes was limited to (None: a whole range)."""
    seen: list[list[int] | None] = []
    real = members_sql.member_changes

    def spying(*args: Any, ids: Sequence[int] | None = None, **kwargs: Any) -> list[Any]:
        seen.append(None if ids is None else list(ids))
        return real(*args, ids=ids, **kwargs)

    monkeypatch.setattr(members_sql, "member_changes", spying)
    return seen


def test_only_changed_customers_are_read_and_every_change_reaches_the_platform(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    client: TestClient,
    owner: dict[str, str],
    reads: list[list[int] | None],
) -> None:
    meta, _google = servers
    held = meta.audiences[fake_meta.AUDIENCE_ID]
    store = shop.store
    cast = add_cast(session, store)
    dropped_id = add_customer(session, store, email="dropped@example.com").id
    buyer = add_customer(session, store, email="buyer@example.com")
    ids = cast.members | {dropped_id, buyer.id}
    profile_id = shop.profile.id
    filler_id, buyer_id = cast.fillers[0], buyer.id
    session.rollback()

    def sync() -> None:
        reads.clear()
        api.sync(created)
        run_worker(app, worker_settings)

    created = api.create(meta_audience())["id"]
    sync()
    assert held == {held_row(session, i) for i in ids}
    assert None in reads  # the first sync reads every range
    old = {i: held_row(session, i) for i in ids}

    # Nothing changed: no customer is read; an order (no part of `all`) changes nothing;
    # nor does an update that writes the same values.
    add_order(session, store, buyer, days_ago=1)
    run_sql(session, "UPDATE customers SET email = email WHERE id = :i", i=filler_id)
    calls = len(meta.requests)
    sync()
    assert reads == [] and len(meta.requests) == calls

    change_the_cast(session, client, owner, profile_id, cast)
    run_sql(session, "DELETE FROM customers WHERE id = :i", i=dropped_id)
    newcomer = add_customer(session, store, email="new@example.com")
    newcomer_id = newcomer.id
    session.rollback()
    sync()
    opted_id, stopped_id, erased_id = cast.opted, cast.stopped, cast.erased
    changed = {cast.mover, cast.nameless, dropped_id, opted_id, stopped_id, erased_id, newcomer_id}
    assert reads == [sorted(changed)]
    kept = ids - {opted_id, stopped_id, erased_id, dropped_id} | {cast.nameless, newcomer_id}
    assert held == {held_row(session, i) for i in kept}
    for gone in (cast.mover, opted_id, stopped_id, erased_id, dropped_id):
        assert old[gone] not in held
    assert api.get(created)["members"] == len(kept)

    # The erased and dropped customers' deletions were compared by the only destination:
    # they are forgotten.
    left = session.execute(
        text("SELECT count(*) FROM customer_deletions WHERE profile_id = :p"), {"p": profile_id}
    ).scalar()
    session.rollback()
    assert left == 0

    # The opt-out lifted and the STOP ended (START): both come back.
    lift_opt_out(client, owner, profile_id)
    opt_in_phone(session, "+16505550002")
    session.commit()
    sync()
    assert reads == [sorted({opted_id, stopped_id})]
    assert old[opted_id] in held and old[stopped_id] in held
    assert old[buyer_id] in held


def test_a_segment_of_orders_compares_every_member(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    reads: list[list[int] | None],
) -> None:
    """`buyers` depends on the orders, which carry no change number: every range is read,
    and a new order's customer joins."""
    meta, _google = servers
    held = meta.audiences[fake_meta.AUDIENCE_ID]
    first = add_customer(session, shop.store, email="first@example.com")
    later = add_customer(session, shop.store, email="later@example.com")
    add_order(session, shop.store, first, days_ago=2)
    first_id, later_id = first.id, later.id
    session.rollback()
    created = api.create(meta_audience("buyers"))["id"]
    api.sync(created)
    run_worker(app, worker_settings)
    assert held == {held_row(session, first_id)}
    add_order(session, shop.store, later, days_ago=1)
    session.rollback()
    reads.clear()
    api.sync(created)
    run_worker(app, worker_settings)
    assert reads and all(part is None for part in reads)
    assert held == {held_row(session, first_id), held_row(session, later_id)}


@pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL's writers commit out of order")
def test_a_write_under_way_is_compared_by_a_later_sync(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: Servers,
    worker_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    reads: list[list[int] | None],
) -> None:
    """A customer write that drew its change number and has not committed when a sync
    begins: the sync waits for it (at most change_numbers.LOCK_SECONDS), else compares every
    member without advancing its number, so the change is never skipped."""
    meta, _google = servers
    held = meta.audiences[fake_meta.AUDIENCE_ID]
    quick = add_customer(session, shop.store, email="quick@example.com")
    slow = add_customer(session, shop.store, email="slow@example.com")
    quick_id, slow_id = quick.id, slow.id
    session.rollback()
    created = api.create(meta_audience())["id"]
    api.sync(created)
    run_worker(app, worker_settings)
    assert held == {held_row(session, quick_id), held_row(session, slow_id)}
    seq_before = session.execute(
        text("SELECT members_seq FROM destinations WHERE id = :d"), {"d": created}
    ).scalar()
    session.rollback()

    monkeypatch.setattr(change_numbers, "LOCK_SECONDS", 1)
    writer = app.state.sessionmaker()
    try:
        # Drawn first, committed last.
        writer.execute(
            text("UPDATE customers SET email = 'slow2@example.com' WHERE id = :i"), {"i": slow_id}
        )
        run_sql(
            session, "UPDATE customers SET email = 'quick2@example.com' WHERE id = :i", i=quick_id
        )
        reads.clear()
        api.sync(created)
        run_worker(app, worker_settings)
        # No mark: every range read, the committed change sent, the number kept.
        assert reads and all(part is None for part in reads)
        assert held_row(session, quick_id) in held
        seq_after = session.execute(
            text("SELECT members_seq FROM destinations WHERE id = :d"), {"d": created}
        ).scalar()
        session.rollback()
        assert seq_after == seq_before
        writer.commit()
    finally:
        writer.close()
    reads.clear()
    api.sync(created)
    run_worker(app, worker_settings)
    assert reads == [sorted([quick_id, slow_id])]  # both, since the number was kept
    assert held == {held_row(session, quick_id), held_row(session, slow_id)}
