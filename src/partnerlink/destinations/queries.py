"""The SQL of destinations: claiming due syncs, the orders still to send, and the
counters a sent batch moves. The members each audience list holds are members.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Select,
    Table,
    and_,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.db import sets
from partnerlink.db.raw import Sql
from partnerlink.destinations.models import (
    NEEDS_ATTENTION,
    Destination,
    DestinationConversion,
    DestinationMember,
)
from partnerlink.jobs import claim_due
from partnerlink.orders.models import Order
from partnerlink.partners.models import Partner
from partnerlink.stores.models import Store

destinations: Table = Destination.__table__  # type: ignore[assignment]
members: Table = DestinationMember.__table__  # type: ignore[assignment]
conversions: Table = DestinationConversion.__table__  # type: ignore[assignment]
orders = Order.__table__
customers = Customer.__table__
stores = Store.__table__
partners = Partner.__table__

CONVERSION_DAYS = 62  # an order older than this when sent is not sent (CONTRACT §11)


def claim(session: Session, *, now: datetime, limit: int, lease_seconds: float) -> list[Any]:
    """Destinations due for a sync (their time came, or a sync was asked for), leased.

    One waiting for new credentials is due only when a sync is asked for."""
    due = or_(
        and_(destinations.c.status != NEEDS_ATTENTION, destinations.c.next_attempt_at <= now),
        destinations.c.sync_requested,
    )
    return claim_due(
        session,
        destinations,
        due=due,
        order_by=[destinations.c.next_attempt_at],
        limit=limit,
        lease_seconds=lease_seconds,
        now=now,
        returning=[destinations.c.id],
    )


def claim_one(session: Session, *, destination_id: str, now: datetime, lease_seconds: float) -> Any:
    """The one destination (an operator's `destinations sync ID`), leased if free."""
    rows = claim_due(
        session,
        destinations,
        due=destinations.c.id == destination_id,
        order_by=[destinations.c.id],
        limit=1,
        lease_seconds=lease_seconds,
        now=now,
        returning=[destinations.c.id],
    )
    return rows[0] if rows else None


def add_to_counters(connection: Connection, destination_id: str, **amounts: int) -> None:
    """Adds to `members`, `sent_added`, `sent_removed`, `sent_events`, `sent_rejected`."""
    values = {name: destinations.c[name] + amount for name, amount in amounts.items() if amount}
    if values:
        connection.execute(
            update(destinations).where(destinations.c.id == destination_id).values(values)
        )


def conversions_due(
    connection: Connection,
    *,
    destination_id: str,
    profile_id: str,
    now: datetime,
    after: int,
    limit: int,
) -> list[Any]:
    """Eligible orders not yet sent to the destination, in row-id order after `after`:
    CLOSED (any letter case) with a price above zero (a refund or a zero-value order is
    no purchase, CONTRACT §15), of a real store and no sandbox partner, with an email or
    a phone, created within the last 62 days. One query for every platform, and for a
    sync's preview: at most `limit`, fewer only when no more are due.

    The orders are read a window at a time: the next `2 * limit` recent orders of the
    profile by row id (`_window_end`), then the eligible ones among them. Read in one
    statement, PostgreSQL joined every order after `after` to its customer and sorted
    them all to keep `limit` (its estimate of the CLOSED ones was far too low to walk the
    key instead): a sync of 100,000 orders spent 0.24 s a request there, its most."""
    since = now - timedelta(days=CONVERSION_DAYS)
    if after <= 0:  # from the first order recent enough, not the profile's oldest
        first = connection.scalar(
            select(func.min(orders.c.id)).where(
                orders.c.profile_id == profile_id, orders.c.ordered_at >= since
            )
        )
        after = max(after, int(first or 0) - 1)
    rows: list[Any] = []
    while len(rows) < limit:
        end = _window_end(connection, profile_id, since, after, 2 * limit)
        statement = _due(destination_id, profile_id, since, after, end, limit - len(rows))
        rows.extend(connection.execute(statement).all())
        if end is None:
            break
        after = end
    return rows


def _window_end(
    connection: Connection, profile_id: str, since: datetime, after: int, size: int
) -> int | None:
    """The row id of the `size`-th order of the profile after `after` created since
    `since`; None when fewer remain."""
    return connection.scalar(
        select(orders.c.id)
        .where(
            orders.c.profile_id == profile_id,
            orders.c.id > after,
            orders.c.ordered_at >= since,
        )
        .order_by(orders.c.id)
        .offset(size - 1)
        .limit(1)
    )


def _due(
    destination_id: str,
    profile_id: str,
    since: datetime,
    after: int,
    end: int | None,
    limit: int,
) -> Select[Any]:
    """The eligible orders not yet sent with a row id in (`after`, `end`]."""
    email = func.coalesce(orders.c.customer_email, customers.c.email)
    phone = func.coalesce(orders.c.customer_phone_number, customers.c.phone_number)
    statement = (
        select(
            orders.c.id,
            orders.c.order_id,
            orders.c.order_price,
            orders.c.order_currency,
            orders.c.ordered_at,
            email.label("email"),
            phone.label("phone"),
            func.coalesce(customers.c.first_name, orders.c.customer_first_name).label("first"),
            func.coalesce(customers.c.last_name, orders.c.customer_last_name).label("last"),
            customers.c.city,
            func.coalesce(customers.c.country_code, stores.c.country_code).label("country"),
            customers.c.postal_code,
        )
        .select_from(
            orders.join(stores, stores.c.id == orders.c.store_id).outerjoin(
                customers, customers.c.id == orders.c.customer_id
            )
        )
        .where(
            orders.c.profile_id == profile_id,
            orders.c.id > after,
            func.upper(orders.c.order_status) == "CLOSED",
            orders.c.order_price > 0,
            orders.c.ordered_at >= since,
            stores.c.is_test.is_(False),
            or_(email.is_not(None), phone.is_not(None)),
            ~exists().where(partners.c.id == orders.c.partner_id, partners.c.sandbox),
            ~exists().where(
                conversions.c.destination_id == destination_id,
                conversions.c.order_row_id == orders.c.id,
            ),
        )
        .order_by(orders.c.id)
        .limit(limit)
    )
    return statement if end is None else statement.where(orders.c.id <= end)


# The orders sent, as one text of ids the server splits (db/sets.SPLIT).
_REMEMBER_CONVERSIONS = sets.BulkWrite.insert(
    sets.RowSet({"order_row_id": "bigint"}, form=sets.SPLIT),
    "destination_conversions (destination_id, order_row_id, profile_id, sent_at)",
    ":destination_id, :order_row_id, :profile_id, :sent_at",
)


def remember_conversions(
    connection: Connection,
    destination_id: str,
    profile_id: str,
    order_ids: Sequence[int],
    now: datetime,
) -> None:
    sql = Sql.of_connection(connection)
    _REMEMBER_CONVERSIONS.run(
        sql,
        [{"order_row_id": order_id} for order_id in order_ids],
        {"destination_id": destination_id, "profile_id": profile_id, "sent_at": sql.time(now)},
    )
