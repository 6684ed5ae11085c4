"""Claiming job rows with a lease, and writing to them only while the lease is held.

A claim is one atomic UPDATE of the rows that are due and free (no lease, or one that
ran out): it sets `lease_until` (and counts the attempt). On PostgreSQL the rows are
chosen with FOR UPDATE SKIP LOCKED, so several workers take different rows rather than
queue on the same ones; SQLite, which has one writer at a time, ignores the clause. A
worker that dies leaves its rows to be claimed again once the lease runs out.

The held lease is the claim's fencing token: an outcome, a renewal or a release applies
only `WHERE lease_until = <the lease this worker was given>`. Once another worker has
claimed the row again (after the lease ran out), the old holder's writes match nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Column, ColumnElement, Row, ScalarSelect, Table, select, update
from sqlalchemy.orm import Session


class LeaseLost(Exception):
    """Another worker claimed the row after this worker's lease ran out: stop, record nothing."""


def _key(table: Table) -> Column[Any]:
    keys = list(table.primary_key.columns)
    if len(keys) != 1:
        raise ValueError(f"a job table needs a one-column primary key: {table.name}")
    return keys[0]


def lease_is_free(table: Table, now: datetime) -> ColumnElement[bool]:
    """No worker holds the row: it has no lease, or its lease ran out."""
    lease = table.c.lease_until
    return lease.is_(None) | (lease < now)


def due_keys(
    table: Table,
    *,
    due: ColumnElement[bool],
    order_by: Sequence[Any],
    limit: int,
    now: datetime,
) -> ScalarSelect[Any]:
    """The keys of up to `limit` rows that are due and free, in `order_by` order, skipping
    rows another transaction has locked (PostgreSQL); for an UPDATE's `IN (...)`."""
    return (
        select(_key(table))
        .where(due, lease_is_free(table, now))
        .order_by(*order_by)
        .limit(limit)
        .with_for_update(skip_locked=True)  # ignored by SQLite, whose writers queue up anyway
        .scalar_subquery()
    )


def claim_due(
    session: Session,
    table: Table,
    *,
    due: ColumnElement[bool],
    order_by: Sequence[Any],
    limit: int,
    lease_seconds: float,
    now: datetime,
    returning: Sequence[Any],
    values: Mapping[str, Any] | None = None,
) -> list[Row[Any]]:
    """Claims up to `limit` due rows in one statement and answers them.

    Each row gets `lease_until = now + lease_seconds` (and `attempts + 1` where the table
    counts attempts), plus any other `values` (e.g. a status). The rows answer the
    `returning` columns and, last, `lease_until`: the lease to hold them by.
    """
    lease_until = now + timedelta(seconds=lease_seconds)
    sets: dict[str, Any] = {"lease_until": lease_until, **(values or {})}
    if "attempts" in table.c:
        sets["attempts"] = table.c.attempts + 1
    chosen = due_keys(table, due=due, order_by=order_by, limit=limit, now=now)
    lease = table.c.lease_until
    columns = [*returning, *([] if any(c is lease for c in returning) else [lease])]
    return list(
        session.execute(
            update(table)
            # Free again re-checked: a row claimed meanwhile by another worker is not taken.
            .where(_key(table).in_(chosen), lease_is_free(table, now))
            .values(sets)
            .returning(*columns)
            .execution_options(synchronize_session=False)
        ).all()
    )


def record_if_leased(
    session: Session,
    table: Table,
    *,
    row_id: Any,
    lease_until: datetime,
    values: Mapping[str, Any],
) -> bool:
    """Writes `values` to the row if this worker still holds its lease; answers whether it
    did (False: the lease ran out and another worker claimed the row, or it was released).
    The lease ends with the write unless `values` sets `lease_until` itself."""
    sets = {"lease_until": None, **values}
    key = _key(table)
    written = session.execute(
        update(table)
        .where(key == row_id, table.c.lease_until == lease_until)
        .values(sets)
        .returning(key)
        .execution_options(synchronize_session=False)
    ).first()
    return written is not None


def renew_lease(
    session: Session,
    table: Table,
    *,
    row_id: Any,
    lease_until: datetime,
    lease_seconds: float,
    now: datetime,
) -> datetime:
    """Extends a held lease to `now + lease_seconds`; answers the new lease to hold the row
    by from the commit on, or raises LeaseLost. (Should the transaction roll back, the old
    lease is still the one held.)"""
    renewed = now + timedelta(seconds=lease_seconds)
    if not record_if_leased(
        session, table, row_id=row_id, lease_until=lease_until, values={"lease_until": renewed}
    ):
        raise LeaseLost
    return renewed
