"""Conversion class of an order (CONTRACT.md §6), fixed when the order is first stored.

The class is a SQL expression evaluated inside the INSERT of the order itself,
so that it costs no extra round-trip and is computed only by the insert that
wins when the same order arrives many times at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, case, literal, or_, select

from partnerlink.orders.models import Order, Touch

ANONYMOUS = "anonymous"
ORGANIC = "organic"
NEW = "new"
RETURNING = "returning"
CLASSES = (NEW, RETURNING, ORGANIC, ANONYMOUS)

_EARLIEST = datetime.min.replace(tzinfo=UTC)


def window_start(created_at: datetime, window_days: int) -> datetime:
    """The earliest touch that still counts for an order made at `created_at`."""
    try:
        return created_at - timedelta(days=window_days)
    except OverflowError:
        return _EARLIEST


def conversion_expression(
    *,
    profile_id: str,
    customer_id: int | None,
    email: str | None,
    phone_number: str | None,
    created_at: datetime,
    window_days: int,
) -> ColumnElement[str]:
    """The class of a new order, as SQL.

    `new` or `returning` when the customer (matched by its normalized email or
    phone) had an ad touch of the profile within the window before the order;
    `returning` when the customer also has an order in the profile made no later
    than this one; `organic` otherwise; `anonymous` without a customer.
    """
    identities = []
    if email:
        identities.append(Touch.email == email)
    if phone_number:
        identities.append(Touch.phone_number == phone_number)
    if customer_id is None or not identities:
        return literal(ANONYMOUS if customer_id is None else ORGANIC)
    touched = (
        select(Touch.id)
        .where(
            Touch.profile_id == profile_id,
            or_(*identities),
            Touch.touched_at >= window_start(created_at, window_days),
            Touch.touched_at <= created_at,
        )
        .correlate(None)
        .exists()
    )
    ordered_before = (
        select(Order.id)
        .where(
            Order.customer_id == customer_id,
            Order.profile_id == profile_id,
            Order.ordered_at <= created_at,
        )
        .correlate(None)
        .exists()
    )
    return case((~touched, ORGANIC), (ordered_before, RETURNING), else_=NEW)
