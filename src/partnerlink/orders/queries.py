"""The orders domain's statements, in one place.

POST /v1/orders is the hottest path of the service, so its statements are
built once per database dialect, with bound parameters, and run on the
session's connection (SQLAlchemy Core): building and cache-keying a fresh
ORM statement per request cost more than the database work itself (measured).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Select,
    Table,
    Update,
    bindparam,
    case,
    exists,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from partnerlink.orders.conversion import ANONYMOUS, NEW, ORGANIC, RETURNING
from partnerlink.orders.models import Order, Touch

orders: Table = Order.__table__  # type: ignore[assignment]
touches: Table = Touch.__table__  # type: ignore[assignment]

# Written on every store of an order; the rest (identity, conversion, received_at) only once.
UPDATED_COLUMNS = (
    "order_price",
    "order_currency",
    "order_status",
    "order_type",
    "ordered_at",
    "ordered_at_offset_minutes",
    "partner_updated_at",
    "customer_id",
    "customer_first_name",
    "customer_last_name",
    "customer_email",
    "customer_phone_number",
    "details",
    "store_snapshot",
    "updated_at",
)
INSERTED_COLUMNS = ("store_id", "profile_id", "order_id", "received_at", *UPDATED_COLUMNS)


def dialect_insert_for(dialect: str) -> Callable[..., Any]:
    """The INSERT construct with ON CONFLICT support of a database dialect."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def _bind(name: str) -> Any:
    return bindparam(name, type_=orders.c[name].type)


def _conversion() -> ColumnElement[str]:
    """The class of a new order (CONTRACT.md §6), computed by the INSERT itself.

    Parameters: `profile_id`, `customer_id`, the customer's normalized `match_email`
    and `match_phone` (NULL when it has none: NULL never equals anything), the
    order's `ordered_at` and the window's `window_start`.
    """
    touched = exists().where(
        touches.c.profile_id == _bind("profile_id"),
        or_(
            touches.c.email == bindparam("match_email", type_=touches.c.email.type),
            touches.c.phone_number == bindparam("match_phone", type_=touches.c.phone_number.type),
        ),
        touches.c.touched_at >= bindparam("window_start", type_=touches.c.touched_at.type),
        touches.c.touched_at <= _bind("ordered_at"),
    )
    ordered_before = exists().where(
        orders.c.customer_id == _bind("customer_id"),
        orders.c.profile_id == _bind("profile_id"),
        orders.c.ordered_at <= _bind("ordered_at"),
    )
    return case((~touched, ORGANIC), (ordered_before, RETURNING), else_=NEW)


@cache
def insert_order(dialect: str, *, anonymous: bool) -> Insert:
    """INSERT ... ON CONFLICT (store, orderId) DO NOTHING RETURNING id: no row when it existed."""
    conversion = literal(ANONYMOUS) if anonymous else _conversion()
    statement: Any = dialect_insert_for(dialect)(orders).values(
        {**{name: _bind(name) for name in INSERTED_COLUMNS}, "conversion": conversion}
    )
    inserted: Insert = statement.on_conflict_do_nothing(
        index_elements=[orders.c.store_id, orders.c.order_id]
    ).returning(orders.c.id)
    return inserted


@cache
def update_order(*, guarded: bool) -> Update:
    """UPDATE of a stored order; `guarded` skips it when the stored `updatedAt` is newer."""
    # Parameters `key_store_id` and `key_order_id` name the order; the SET values its columns.
    statement = update(orders).where(
        orders.c.store_id == bindparam("key_store_id", type_=orders.c.store_id.type),
        orders.c.order_id == bindparam("key_order_id", type_=orders.c.order_id.type),
    )
    if guarded:
        stored = orders.c.partner_updated_at
        statement = statement.where(
            or_(stored.is_(None), stored <= bindparam("new_updated_at", type_=stored.type))
        )
    return statement.values({name: _bind(name) for name in UPDATED_COLUMNS}).returning(orders.c.id)


def find_order(*, store_id: str, order_id: str) -> Select[Order]:
    return select(Order).where(Order.store_id == store_id, Order.order_id == order_id)


def recent_orders(*, store_id: str, limit: int) -> Select[str, int, str, str | None, str, datetime]:
    return (
        select(
            Order.order_id,
            Order.order_price,
            Order.order_currency,
            Order.order_status,
            Order.conversion,
            Order.ordered_at,
        )
        .where(Order.store_id == store_id)
        .order_by(Order.ordered_at.desc(), Order.id.desc())
        .limit(limit)
    )
