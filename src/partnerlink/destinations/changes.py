"""Which customers an audience sync of `all` compares: those numbered since its last
comparison (migration 0030: `customers.change_seq`, `customer_deletions`).

The database numbers every write that can change a customer's audience row or
membership; a destination keeps the number up to which it compared (`members_seq`).
`change_mark` takes the number a sync that starts now sees at least, `ids_to_compare`
the customers changed since the destination's number (or None: compare every member),
and `forget_deletions` drops the deletions every destination has compared since.
"""

from __future__ import annotations

import logging

from sqlalchemy import delete, func, select, union, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences.service import ExportPlan
from partnerlink.destinations.members import changes, deletions, destinations
from partnerlink.destinations.models import Destination

log = logging.getLogger("partnerlink.destinations")

# Changed customers a sync reads per range (the rest of a range's work is per member).
CHANGES_CHUNK = 100_000


def change_mark(connection: Connection, profile_id: str) -> int:
    """The change number up to which every change of the profile's customers is
    committed (migration 0030): what a comparison that starts now sees at least.

    PostgreSQL draws numbers from a sequence as writes happen, and a write may commit
    after a later one: the highest number committed is not enough. So this takes the
    customers' SHARE lock, which waits for the writes under way (each holds the table's
    ROW EXCLUSIVE lock while it draws and until it commits) and keeps new ones out for
    the instant it takes to read the sequence; a `lock_timeout` of LOCK_SECONDS bounds
    the wait (the caller then compares every member, as without numbers). SQLite writes
    one transaction at a time: the profile's highest number is the mark, once the
    customers created since the last mark (NULL: SQLite numbers no insert) are given
    the next number, in this write transaction."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_SECONDS}s'")
        connection.exec_driver_sql("LOCK TABLE customers IN SHARE MODE")
        value = connection.exec_driver_sql(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM customer_change_seq"
        ).scalar()
        return int(value or 0)
    highest = [  # one index entry each (max() under a WHERE reads all the profile's)
        select(table.c.change_seq)
        .where(table.c.profile_id == profile_id, table.c.change_seq.is_not(None))
        .order_by(table.c.change_seq.desc())
        .limit(1)
        for table in (changes, deletions)
    ]
    mark = max(int(connection.scalar(statement) or 0) for statement in highest) + 1
    unnumbered = (
        update(changes)
        .where(changes.c.profile_id == profile_id, changes.c.change_seq.is_(None))
        .values(change_seq=mark)
    )
    return mark if connection.execute(unnumbered).rowcount else mark - 1


LOCK_SECONDS = 2


def changed_customers(connection: Connection, profile_id: str, since: int, until: int) -> list[int]:
    """Ids of the profile's customers created, changed or deleted with a change number in
    (since, until], ascending (ix_customers_profile_change, customer_deletions' key)."""
    changed = select(changes.c.id).where(
        changes.c.profile_id == profile_id,
        changes.c.change_seq > since,
        changes.c.change_seq <= until,
    )
    deleted = select(deletions.c.customer_id).where(
        deletions.c.profile_id == profile_id,
        deletions.c.change_seq > since,
        deletions.c.change_seq <= until,
    )
    return sorted(connection.scalars(union(changed, deleted)).all())


def forget_deletions(connection: Connection, profile_id: str) -> None:
    """Drops the deletions every audience destination of the profile has compared since
    (a destination without a change number compares every member anyway)."""
    compared = (
        select(func.min(destinations.c.members_seq))
        .where(destinations.c.profile_id == profile_id, destinations.c.kind == "audience")
        .scalar_subquery()
    )
    connection.execute(
        delete(deletions).where(
            deletions.c.profile_id == profile_id, deletions.c.change_seq <= compared
        )
    )


def change_mark_or_none(sessions: sessionmaker[Session], profile_id: str) -> int | None:
    """`change_mark` on the primary; None when the customers' writes under way
    did not finish within its wait (a long import): this sync then goes without."""
    try:
        with sessions.begin() as session:
            return change_mark(session.connection(), profile_id)
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
        ids = changed_customers(session.connection(), destination.profile_id, since, mark)
    if len(ids) > max(CHANGES_CHUNK, destination.members // CHANGED_SHARE):
        return None
    return ids


# Segments whose members only the customer rows, their opt-outs and erasures decide; the
# others depend on orders and on time too, and compare every member's fingerprint.
CUSTOMER_ONLY_SEGMENTS = frozenset({"all"})
# Above 1/CHANGED_SHARE of the held members changed, reading every range costs less.
CHANGED_SHARE = 5
