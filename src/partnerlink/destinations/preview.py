"""What a destination's next sync would send (CONTRACT §15, "Preview"), computed
without sending or changing anything: no platform call, no lease, no write.

It asks the sync's own questions of the same SQL: for an audience, the segment's
exportable members beside the held rows (members.member_changes, compared by
audience_sync.compare_pairs with the platform's row), counting each row to add and to
remove (a member whose identifiers changed is removed by its old row and added with its
new one, as the sync sends it); for sales, the eligible orders not yet sent
(queries.conversions_due). Rows a platform then refuses are not foreseen: the counts are
what goes, not what the platform takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.orm import Session

from partnerlink.audiences import queries as audience_queries
from partnerlink.db.base import utcnow
from partnerlink.destinations import queries
from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync import changes, members
from partnerlink.destinations.sync.audience_sync import (
    COMPARE_ALL_CHUNK,
    compare_pairs,
    what_to_compare,
)
from partnerlink.destinations.sync.senders import GoogleAudience, MetaAudience
from partnerlink.security.identifier_digests import identifier_key

# Orders counted a read, as the conversions sync reads them (a platform call's worth is
# smaller; the count does not depend on it).
ORDERS_CHUNK = 10_000


@dataclass(frozen=True)
class Preview:
    add: int = 0
    remove: int = 0
    events: int = 0

    def as_json(self) -> dict[str, int]:
        return {"add": self.add, "remove": self.remove, "events": self.events}


def preview(session: Session, destination: Destination, *, signing_key: bytes) -> Preview:
    """The counts of the next sync of `destination`, read in `session`; writes nothing."""
    if destination.kind == "audience":
        return _audience(session, destination, identifier_key(signing_key))
    return Preview(events=_orders_due(session, destination))


def _audience(session: Session, destination: Destination, digest_key: bytes) -> Preview:
    plan, excluded, basis = what_to_compare(session, destination, digest_key)
    # Under the basis the held rows were compared with, only the pairs whose fingerprint
    # differs can call for a row; a new basis compares every member (as the sync does).
    compare_all = destination.members_basis != basis
    sender = MetaAudience if destination.platform == "meta" else GoogleAudience

    def make_row(customer: Any) -> str:
        # The sender's own row, which depends on the customer alone (no client needed).
        return sender.row(cast(Any, None), customer)

    size = COMPARE_ALL_CHUNK if compare_all else changes.CHANGES_CHUNK
    connection = session.connection()
    members.prepare(connection, digest_key)
    add = remove = 0
    after: int | None = 0
    while after is not None:
        until = audience_queries.chunk_end(connection, destination.profile_id, after, size)
        rows = members.member_changes(
            connection, plan, destination.id, after, until, compare_all=compare_all
        )
        adds, removes, _same_rows = compare_pairs(rows, make_row, excluded)
        add += len(adds)
        remove += len(removes)
        after = until
    return Preview(add=add, remove=remove)


def _orders_due(session: Session, destination: Destination) -> int:
    connection = session.connection()
    now = utcnow()
    count, after = 0, 0
    while True:
        rows = queries.conversions_due(
            connection,
            destination_id=destination.id,
            profile_id=destination.profile_id,
            now=now,
            after=after,
            limit=ORDERS_CHUNK,
        )
        count += len(rows)
        if len(rows) < ORDERS_CHUNK:
            return count
        after = int(rows[-1].id)
