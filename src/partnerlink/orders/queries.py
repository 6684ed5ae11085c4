"""The orders domain's statements, in one place.

POST /v1/orders is the hottest path of the service: its statements are plain
SQL run on the driver's connection (db/raw.py), since SQLAlchemy's per-execute
work cost more CPU than the database's own (measured). The reads below, for
the merchant API and the receipt page, stay ORM statements.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, select

from partnerlink.db.raw import Statement
from partnerlink.orders.conversion import ANONYMOUS, NEW, ORGANIC, RETURNING
from partnerlink.orders.models import Order

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

# The class of a new order (CONTRACT.md §6), computed by the INSERT itself. Parameters:
# the customer's normalized `match_email` and `match_phone` (NULL when it has none:
# NULL never equals anything), the order's `ordered_at` and the window's `window_start`.
_CONVERSION = (
    "CASE WHEN NOT EXISTS (SELECT 1 FROM touches WHERE touches.profile_id = :profile_id"
    " AND (touches.email = :match_email OR touches.phone_number = :match_phone)"
    " AND touches.touched_at >= :window_start AND touches.touched_at <= :ordered_at)"
    f" THEN '{ORGANIC}'"
    " WHEN EXISTS (SELECT 1 FROM orders AS earlier WHERE earlier.customer_id = :customer_id"
    " AND earlier.profile_id = :profile_id AND earlier.ordered_at <= :ordered_at)"
    f" THEN '{RETURNING}' ELSE '{NEW}' END"
)


def _insert(conversion: str) -> Statement:
    """INSERT ... ON CONFLICT (store, orderId) DO NOTHING RETURNING id: no row when it existed."""
    columns = ", ".join(INSERTED_COLUMNS)
    values = ", ".join(f":{name}" for name in INSERTED_COLUMNS)
    return Statement(
        f"INSERT INTO orders ({columns}, conversion) VALUES ({values}, {conversion})"
        " ON CONFLICT (store_id, order_id) DO NOTHING RETURNING id"
    )


INSERT_ORDER = _insert(_CONVERSION)
INSERT_ANONYMOUS_ORDER = _insert(f"'{ANONYMOUS}'")

_SET = ", ".join(f"{name} = :{name}" for name in UPDATED_COLUMNS)
_KEY = "WHERE store_id = :store_id AND order_id = :order_id"
UPDATE_ORDER = Statement(f"UPDATE orders SET {_SET} {_KEY} RETURNING id")
# Skipped (no row) when the stored updatedAt is newer than the re-send's.
UPDATE_ORDER_UNLESS_NEWER = Statement(
    f"UPDATE orders SET {_SET} {_KEY} AND (partner_updated_at IS NULL"
    " OR partner_updated_at <= :partner_updated_at) RETURNING id"
)


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
