"""The members a destination holds, as recorded after each platform call."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.destinations.models import DestinationMember
from partnerlink.destinations.sync import members
from tests.destinations.sync_helpers import Destinations, meta_audience
from tests.factories import ConnectedStoreFixture


def _held(session: Session, destination_id: str) -> dict[int, tuple[str, int | None]]:
    rows = session.execute(
        select(
            DestinationMember.customer_id, DestinationMember.sent, DestinationMember.fingerprint
        ).where(DestinationMember.destination_id == destination_id)
    )
    return {int(customer_id): (sent, fingerprint) for customer_id, sent, fingerprint in rows}


def test_remembered_rows_replace_what_was_held_and_forgotten_ones_go(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
) -> None:
    destination_id = Destinations(client, shop.profile.id, owner).create(meta_audience())["id"]
    profile_id = shop.profile.id
    connection = session.connection()
    remember = members.remember_members
    remember(connection, destination_id, profile_id, [(1, "a,b", 10), (2, "c", -(2**63))])
    # A row replaces the one held, its fingerprint too; a row with a line end (none is
    # ever sent, but the batch must still be recorded whole) takes the statement's other
    # path.
    remember(connection, destination_id, profile_id, [(2, "d", 2**63 - 1), (3, 'x\n"y\\z,{', 3)])
    remember(connection, destination_id, profile_id, [(4, "e", None), (1, "f", 11)])
    session.commit()
    assert _held(session, destination_id) == {
        1: ("f", 11),
        2: ("d", 2**63 - 1),
        3: ('x\n"y\\z,{', 3),
        4: ("e", None),
    }
    # New fingerprints of rows that stay; one of a customer not held changes nothing.
    members.refingerprint_members(session.connection(), destination_id, [(4, 40), (7, 70)])
    members.forget_members(session.connection(), destination_id, [1, 3, 99])
    session.commit()
    assert _held(session, destination_id) == {2: ("d", 2**63 - 1), 4: ("e", 40)}
    assert members.count_members(session.connection(), destination_id) == 2
