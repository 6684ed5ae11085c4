"""The customers' change numbers (migration 0030): the database numbers every write that
can change a customer's audience row or membership (`customers.change_seq`, from a
sequence on PostgreSQL, by triggers on customers and opt-outs), and leaves a deleted
customer's id in `customer_deletions` with the number of its deletion. The audience syncs
(destinations/sync/changes.py) read only the customers numbered since their last comparison.
"""

from __future__ import annotations

from sqlalchemy import Table, column, delete, select, table, union, update
from sqlalchemy.engine import Connection

from partnerlink.customers.models import CustomerDeletion

deletions: Table = CustomerDeletion.__table__  # type: ignore[assignment]
# Written by the database alone: not mapped on the Customer model, so that no
# application INSERT ever names the column.
changes = table("customers", column("id"), column("profile_id"), column("change_seq"))


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


def forget_deletions(connection: Connection, profile_id: str, compared_up_to: int) -> None:
    """Drops the profile's deletions numbered up to `compared_up_to`: every reader has
    compared them."""
    connection.execute(
        delete(deletions).where(
            deletions.c.profile_id == profile_id, deletions.c.change_seq <= compared_up_to
        )
    )
