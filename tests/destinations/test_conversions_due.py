"""The orders due to a conversions destination, read a window of row ids at a time
(queries.conversions_due): full batches in row-id order whatever lies between the
eligible orders, short only at the end, none sent twice."""

from __future__ import annotations

from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import queries
from tests.audiences.helpers import add_customer
from tests.destinations.sync_helpers import Destinations, meta_conversions
from tests.destinations.test_sync_conversions import _order
from tests.factories import ConnectedStoreFixture


def _batches(session: Session, destination_id: str, profile_id: str, limit: int) -> list[list[str]]:
    """Every batch a sync would read, as order ids."""
    batches: list[list[str]] = []
    after, now = 0, utcnow()
    while True:
        rows = queries.conversions_due(
            session.connection(),
            destination_id=destination_id,
            profile_id=profile_id,
            now=now,
            after=after,
            limit=limit,
        )
        if not rows:
            return batches
        batches.append([row.order_id for row in rows])
        after = int(rows[-1].id)


def test_full_batches_in_row_order_across_ineligible_orders(
    session: Session, shop: ConnectedStoreFixture, api: Destinations
) -> None:
    partner = shop.partner.partner.id
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    expected = []
    for number in range(3):  # too old: before the first window
        _order(
            session, shop.store, buyer, partner_id=partner, order_id=f"old-{number}", days_ago=70
        )
    for number in range(12):
        _order(session, shop.store, buyer, partner_id=partner, order_id=f"sale-{number}")
        expected.append(f"sale-{number}")
        if number % 3 == 0:  # runs of orders that are no purchase between the sales
            for kind, price, status in (("refund", -5, "CLOSED"), ("open", 5, "OPEN")):
                _order(
                    session,
                    shop.store,
                    buyer,
                    partner_id=partner,
                    order_id=f"{kind}-{number}",
                    price=price,
                    status=status,
                )
            _order(session, shop.store, None, partner_id=partner, order_id=f"anon-{number}")
    destination_id = api.create(meta_conversions())["id"]

    batches = _batches(session, destination_id, shop.profile.id, limit=2)
    assert [len(batch) for batch in batches] == [2] * 6
    assert [order for batch in batches for order in batch] == expected
    # A batch of 5 takes windows of 10 orders: one with many that are not due is
    # followed by the next, and the batch is still full.
    batches = _batches(session, destination_id, shop.profile.id, limit=5)
    assert [len(batch) for batch in batches] == [5, 5, 2]
    assert [order for batch in batches for order in batch] == expected

    # Sent orders are not due again; the others still come in full batches.
    sent = [
        int(row.id)
        for row in queries.conversions_due(
            session.connection(),
            destination_id=destination_id,
            profile_id=shop.profile.id,
            now=utcnow(),
            after=0,
            limit=7,
        )
    ]
    queries.remember_conversions(
        session.connection(), destination_id, shop.profile.id, sent[::2], utcnow()
    )
    session.commit()
    left = [order for index, order in enumerate(expected) if index >= 7 or index % 2]
    batches = _batches(session, destination_id, shop.profile.id, limit=3)
    assert [len(batch) for batch in batches] == [3, 3, 2]
    assert [order for batch in batches for order in batch] == left
