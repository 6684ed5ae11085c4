"""The SQL of destinations: claiming due syncs, the members each list holds, the orders
still to send, and the counters a sent batch moves.

Members are read a range of customer ids at a time (the audience export's keyset
chunks), so a sync of any size holds one chunk in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.db.base import UTCDateTime
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


def held_members(
    connection: Connection, destination_id: str, after: int, until: int | None
) -> dict[int, str]:
    """customer id → the row last sent, of the members with ids in (after, until]."""
    statement = select(members.c.customer_id, members.c.sent).where(
        members.c.destination_id == destination_id, members.c.customer_id > after
    )
    if until is not None:
        statement = statement.where(members.c.customer_id <= until)
    return {int(row[0]): row[1] for row in connection.execute(statement)}


# PostgreSQL takes a batch's ids and rows as two arrays: one statement of two parameters
# rather than 10,000 bound values (a DELETE's IN list, an executemany's 10,000 INSERTs).
# The rows go as one text split by the server at line ends (no stored row holds one:
# hex hashes and commas, or JSON, which escapes control characters): psycopg quotes a
# text array element by element in Python, ~0.14 s a 10,000-row batch against ~0.01.
_FORGET_POSTGRES = text(
    "DELETE FROM destination_members WHERE destination_id = :destination_id "
    "AND customer_id = ANY(CAST(:ids AS bigint[]))"
)
_REMEMBER_POSTGRES = text(
    "INSERT INTO destination_members (destination_id, customer_id, profile_id, sent) "
    "SELECT :destination_id, held.customer_id, :profile_id, held.sent "
    "FROM unnest(CAST(:ids AS bigint[]), string_to_array(:rows, E'\\n')) "
    "AS held(customer_id, sent) "
    "ON CONFLICT (destination_id, customer_id, profile_id) DO UPDATE SET sent = EXCLUDED.sent"
)


def forget_members(connection: Connection, destination_id: str, ids: Sequence[int]) -> None:
    if not ids:
        return
    if connection.dialect.name == "postgresql":
        connection.execute(_FORGET_POSTGRES, {"destination_id": destination_id, "ids": list(ids)})
        return
    connection.execute(
        delete(members).where(
            members.c.destination_id == destination_id, members.c.customer_id.in_(ids)
        )
    )


def remember_members(
    connection: Connection, destination_id: str, profile_id: str, rows: Sequence[tuple[int, str]]
) -> None:
    """The rows the platform now holds (each replacing what was held for its customer):
    one upsert, not a delete then an insert."""
    if not rows:
        return
    lines = "\n".join(sent for _, sent in rows)
    if connection.dialect.name == "postgresql" and lines.count("\n") == len(rows) - 1:
        connection.execute(
            _REMEMBER_POSTGRES,
            {
                "destination_id": destination_id,
                "profile_id": profile_id,
                "ids": [customer_id for customer_id, _ in rows],
                "rows": lines,
            },
        )
        return
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(members)
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=[members.c.destination_id, members.c.customer_id, members.c.profile_id],
            set_={"sent": statement.excluded.sent},
        ),
        [
            {
                "destination_id": destination_id,
                "customer_id": customer_id,
                "profile_id": profile_id,
                "sent": sent,
            }
            for customer_id, sent in rows
        ],
    )


def count_members(connection: Connection, destination_id: str) -> int:
    statement = select(func.count()).where(members.c.destination_id == destination_id)
    return int(connection.scalar(statement) or 0)


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
    CLOSED (any letter case), of a real store and no sandbox partner, with an email or a
    phone, created within the last 62 days."""
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
            orders.c.ordered_at >= now - timedelta(days=CONVERSION_DAYS),
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
    return list(connection.execute(statement).all())


_REMEMBER_CONVERSIONS_POSTGRES = text(
    "INSERT INTO destination_conversions (destination_id, order_row_id, profile_id, sent_at) "
    "SELECT :destination_id, sent.order_row_id, :profile_id, :sent_at "
    "FROM unnest(CAST(:ids AS bigint[])) AS sent(order_row_id)"
).bindparams(bindparam("sent_at", type_=UTCDateTime()))


def remember_conversions(
    connection: Connection,
    destination_id: str,
    profile_id: str,
    order_ids: Sequence[int],
    now: datetime,
) -> None:
    if not order_ids:
        return
    if connection.dialect.name == "postgresql":
        connection.execute(
            _REMEMBER_CONVERSIONS_POSTGRES,
            {
                "destination_id": destination_id,
                "profile_id": profile_id,
                "sent_at": now,
                "ids": list(order_ids),
            },
        )
        return
    connection.execute(
        insert(conversions),
        [
            {
                "destination_id": destination_id,
                "order_row_id": order_id,
                "profile_id": profile_id,
                "sent_at": now,
            }
            for order_id in order_ids
        ],
    )
