"""The orders domain's statements, in one place (Core on the POST /v1/orders hot path)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Insert, Select, Update, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from partnerlink.orders.models import Order
from partnerlink.stores.models import Store

# Columns an update of the order leaves alone: its identity, and what is fixed at first store.
_FIXED_COLUMNS = frozenset({"store_id", "profile_id", "order_id", "conversion", "received_at"})


def dialect_insert(session: Session) -> Callable[..., Any]:
    """The INSERT construct with ON CONFLICT support of the session's database."""
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


def insert_order(
    session: Session, values: dict[str, Any], conversion: ColumnElement[str]
) -> Insert:
    """INSERT ... ON CONFLICT (store, orderId) DO NOTHING RETURNING id: no row when it existed."""
    statement: Any = dialect_insert(session)(Order).values(**values, conversion=conversion)
    inserted: Insert = statement.on_conflict_do_nothing(
        index_elements=[Order.store_id, Order.order_id]
    ).returning(Order.id)
    return inserted


def update_order(
    *, store_id: str, order_id: str, updated_at: datetime | None, values: dict[str, Any]
) -> Update:
    """UPDATE of a stored order, skipped when the stored `updatedAt` is newer."""
    statement = update(Order).where(Order.store_id == store_id, Order.order_id == order_id)
    if updated_at is not None:
        statement = statement.where(
            or_(Order.partner_updated_at.is_(None), Order.partner_updated_at <= updated_at)
        )
    changes = {key: value for key, value in values.items() if key not in _FIXED_COLUMNS}
    return statement.values(**changes).returning(Order.id)


def store_facts(*, store_id: str) -> Select[str, str, bool]:
    """The store columns storing an order needs, when no snapshot came with it."""
    return select(Store.name, Store.country_code, Store.green_invoices).where(Store.id == store_id)


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
