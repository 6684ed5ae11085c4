"""Which customers an audience sync of `all` compares: those numbered since its last
comparison (migration 0030: `customers.change_seq`, `customer_deletions`).

The database numbers every write that can change a customer's audience row or
membership; a destination keeps the number up to which it compared (`members_seq`).
`change_mark_or_none` takes the number a sync that starts now sees at least, `ids_to_compare`
the customers changed since the destination's number (or None: compare every member),
and `forget_deletions` drops the deletions every destination has compared since.
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences.service import ExportPlan
from partnerlink.customers import change_numbers
from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync.members import destinations

log = logging.getLogger("partnerlink.destinations")

# Changed customers a sync reads per range (the rest of a range's work is per member).
CHANGES_CHUNK = 100_000


def forget_deletions(connection: Connection, profile_id: str) -> None:
    """Drops the deletions every audience destination of the profile has compared since
    (a destination without a change number compares every member anyway)."""
    compared = connection.scalar(
        select(func.min(destinations.c.members_seq)).where(
            destinations.c.profile_id == profile_id, destinations.c.kind == "audience"
        )
    )
    if compared is not None:
        change_numbers.forget_deletions(connection, profile_id, int(compared))


def change_mark_or_none(sessions: sessionmaker[Session], profile_id: str) -> int | None:
    """`change_mark` on the primary; None when the customers' writes under way
    did not finish within its wait (a long import): this sync then goes without."""
    try:
        with sessions.begin() as session:
            return change_numbers.change_mark(session.connection(), profile_id)
    except OperationalError as error:
        log.info("audience sync: no change mark (%s); comparing every member", type(error).__name__)
        return None


def ids_to_compare(
    sessions: sessionmaker[Session],
    destination: Destination,
    plan: ExportPlan,
    basis: str,
    mark: int | None,
) -> list[int] | None:
    """The customers to compare, when only the changed ones need be: the segment is
    decided by the customer rows alone (`all`: its predicate reads the customer, its
    opt-out and the suppression list, which only an erasure, deleting the customers,
    grows), no test store's orders take part, the basis stays, and the number of
    changes is small beside the held members. None otherwise: every member is read."""
    since = destination.members_seq
    if (
        mark is None
        or since is None
        or destination.members_basis != basis
        or plan.segment not in CUSTOMER_ONLY_SEGMENTS
        or plan.scope.has_test_stores
    ):
        return None
    with sessions() as session:
        ids = change_numbers.changed_customers(
            session.connection(), destination.profile_id, since, mark
        )
    if len(ids) > max(CHANGES_CHUNK, destination.members // CHANGED_SHARE):
        return None
    return ids


# Segments whose members only the customer rows, their opt-outs and erasures decide; the
# others depend on orders and on time too, and compare every member's fingerprint.
CUSTOMER_ONLY_SEGMENTS = frozenset({"all"})
# Above 1/CHANGED_SHARE of the held members changed, reading every range costs less.
CHANGED_SHARE = 5
