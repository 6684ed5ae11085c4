"""The members a destination holds, as recorded after each platform call."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.destinations import queries
from partnerlink.destinations.models import DestinationMember
from tests.destinations.sync_helpers import Destinations, meta_audience
from tests.factories import ConnectedStoreFixture


def _held(session: Session, destination_id: str) -> dict[int, str]:
    rows = session.execute(
        select(DestinationMember.customer_id, DestinationMember.sent).where(
            DestinationMember.destination_id == destination_id
        )
    )
    return {int(customer_id): sent for customer_id, sent in rows}


def test_remembered_rows_replace_what_was_held_and_forgotten_ones_go(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
) -> None:
    destination_id = Destinations(client, shop.profile.id, owner).create(meta_audience())["id"]
    profile_id = shop.profile.id
    connection = session.connection()
    queries.remember_members(connection, destination_id, profile_id, [(1, "a,b"), (2, "c")])
    # A row replaces the one held; a row with a line end (none is ever sent, but the
    # batch must still be recorded whole) takes the statement's other path.
    queries.remember_members(connection, destination_id, profile_id, [(2, "d"), (3, 'x\n"y\\z,{')])
    queries.remember_members(connection, destination_id, profile_id, [(4, "e"), (1, "f")])
    session.commit()
    assert _held(session, destination_id) == {1: "f", 2: "d", 3: 'x\n"y\\z,{', 4: "e"}
    queries.forget_members(session.connection(), destination_id, [1, 3, 99])
    session.commit()
    assert _held(session, destination_id) == {2: "d", 4: "e"}
    assert queries.count_members(session.connection(), destination_id) == 2
