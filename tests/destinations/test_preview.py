"""Preview (CONTRACT §15): what the next sync would send, computed without sending or
changing anything; the numbers are the ones that sync then sends, on audiences and
sales, Meta and Google."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from partnerlink.destinations.models import Destination, DestinationConversion, DestinationMember
from partnerlink.destinations.preview import preview
from tests.audiences.helpers import add_customer, add_order
from tests.destinations.sync_helpers import (
    Syncing,
    add_cast,
    change_the_cast,
    google_audience,
    google_conversions,
    meta_audience,
    meta_conversions,
)
from tests.factories import ConnectedStoreFixture

AUDIENCES = {"meta": meta_audience, "google": google_audience}
CONVERSIONS = {"meta": meta_conversions, "google": google_conversions}


def _preview(syncing: Syncing, destination_id: str) -> dict[str, int]:
    api = syncing.api
    response = api.client.get(f"{api.base}/{destination_id}/preview", headers=api.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _last_run(syncing: Syncing, destination_id: str) -> dict[str, Any]:
    api = syncing.api
    response = api.client.get(f"{api.base}/{destination_id}/runs?limit=1", headers=api.headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["runs"][0])


def _state(syncing: Syncing, session: Session, destination_id: str) -> tuple[Any, ...]:
    """Everything a preview must leave as it was: the row, its held members and orders
    sent, and every call either platform was sent."""
    row = session.execute(
        select(Destination.__table__).where(Destination.id == destination_id)
    ).one()
    held = session.scalar(
        select(func.count())
        .select_from(DestinationMember)
        .where(DestinationMember.destination_id == destination_id)
    )
    sent = session.scalar(
        select(func.count())
        .select_from(DestinationConversion)
        .where(DestinationConversion.destination_id == destination_id)
    )
    session.rollback()  # the SQLite test database has one connection: give it back
    calls = len(syncing.meta.requests) + len(syncing.google.requests)
    return tuple(row), held, sent, calls


@contextmanager
def _no_writes(engine: Engine) -> Iterator[list[str]]:
    """Every statement that would change the database, while the block runs."""
    writes: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().split(" ", 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}:
            writes.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield writes
    finally:
        event.remove(engine, "before_cursor_execute", seen)


@pytest.mark.parametrize("platform", ["meta", "google"])
def test_an_audience_preview_is_what_the_next_sync_sends_and_changes_nothing(
    platform: str,
    syncing: Syncing,
    session: Session,
    shop: ConnectedStoreFixture,
    client: TestClient,
    owner: dict[str, str],
) -> None:
    cast = add_cast(session, shop.store)
    created = syncing.api.create(AUDIENCES[platform]())
    before = _state(syncing, session, created["id"])
    first = _preview(syncing, created["id"])
    # The 25 of the cast with an identifier, and someone@example.com; nothing held yet.
    assert first == {"add": len(cast.members) + 1, "remove": 0, "events": 0}
    assert _state(syncing, session, created["id"]) == before  # no write, no call
    syncing.run()
    assert _last_run(syncing, created["id"])["added"] == first["add"]
    assert _preview(syncing, created["id"]) == {"add": 0, "remove": 0, "events": 0}

    # A new phone (removed by the old row, added with the new), an email gained (added),
    # an opt-out, a STOP and an erasure (removed).
    change_the_cast(session, client, owner, shop.profile.id, cast)
    before = _state(syncing, session, created["id"])
    second = _preview(syncing, created["id"])
    assert second == {"add": 2, "remove": 4, "events": 0}
    assert _state(syncing, session, created["id"]) == before
    syncing.api.sync(created["id"])
    syncing.run()
    run = _last_run(syncing, created["id"])
    assert (run["added"], run["removed"]) == (second["add"], second["remove"])

    # A PATCHed segment compares every member again, as the sync does.
    syncing.api.patch(created["id"], {"segment": "buyers"})
    third = _preview(syncing, created["id"])
    held = _state(syncing, session, created["id"])[1]
    assert third == {"add": 0, "remove": held, "events": 0}  # no one has bought yet
    syncing.run()
    run = _last_run(syncing, created["id"])
    assert (run["added"], run["removed"]) == (0, held)


@pytest.mark.parametrize("platform", ["meta", "google"])
def test_a_sales_preview_counts_the_eligible_orders_not_yet_sent(
    platform: str, syncing: Syncing, session: Session, shop: ConnectedStoreFixture
) -> None:
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    for _ in range(3):
        add_order(session, shop.store, buyer, days_ago=1, status="CLOSED")
    add_order(session, shop.store, buyer, days_ago=1, status="OPEN")  # not a sale yet
    add_order(session, shop.store, buyer, days_ago=90, status="CLOSED")  # too old
    session.commit()
    created = syncing.api.create(CONVERSIONS[platform]())
    before = _state(syncing, session, created["id"])
    assert _preview(syncing, created["id"]) == {"add": 0, "remove": 0, "events": 3}
    assert _state(syncing, session, created["id"]) == before
    syncing.run()
    assert _last_run(syncing, created["id"])["events"] == 3
    assert _preview(syncing, created["id"])["events"] == 0

    add_order(session, shop.store, buyer, days_ago=0.5, status="CLOSED")
    session.commit()
    assert _preview(syncing, created["id"])["events"] == 1
    syncing.api.sync(created["id"])
    syncing.run()
    assert _last_run(syncing, created["id"])["events"] == 1


@pytest.mark.parametrize("body", [meta_audience, google_conversions])
def test_a_preview_writes_no_row_at_all(
    body: Any, syncing: Syncing, session: Session, shop: ConnectedStoreFixture
) -> None:
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    add_order(session, shop.store, buyer, days_ago=1, status="CLOSED")
    session.commit()
    created = syncing.api.create(body())
    destination = session.get(Destination, created["id"])
    assert destination is not None
    engine = session.get_bind()
    assert isinstance(engine, Engine)
    with _no_writes(engine) as writes:
        counts = preview(session, destination, signing_key=syncing.settings.signing_key)
    session.rollback()
    assert writes == []
    expected = (2, 0, 0) if body is meta_audience else (0, 0, 1)  # two people, one sale
    assert (counts.add, counts.remove, counts.events) == expected
