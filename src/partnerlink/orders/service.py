"""Orders: store (create or update) with customer, conversion class and e-receipt; read back.

One POST is one unit of work: store snapshot → customer → order upsert (its
conversion class computed inside the INSERT) → receipt row. Locks are taken in
that order by every request, so concurrent posts of one order queue up
instead of deadlocking on PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.customers.service import resolve_customer
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql
from partnerlink.orders import queries
from partnerlink.orders.conversion import window_start
from partnerlink.orders.models import Order
from partnerlink.orders.schemas import OrderIn
from partnerlink.problems import DomainError, Forbidden, NotFound
from partnerlink.receipts.service import order_visible, queue_receipt, receipt_due
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.stores.service import apply_store_profile_sql, load_store
from partnerlink.tokens.service import ConnectedStore, authenticate_access_token_sql


class ReceiptsDisabled(Forbidden):
    code = "receipts_disabled"
    detail = "E-receipts are turned off for this store."


class ServiceBusy(DomainError):
    status = 503
    code = "busy"
    detail = "The database is busy; retry shortly with exponential backoff."


@dataclass(frozen=True, slots=True)
class StoredOrder:
    order_pk: int | None  # None: an older version, acknowledged and not applied
    created: bool
    receipt_queued: bool


@dataclass(frozen=True, slots=True)
class _StoreFacts:
    name: str
    country_code: str
    green_invoices: bool


def accept_order(sql: Sql, *, token: str, order: OrderIn, settings: Settings) -> StoredOrder:
    """Authenticates the caller and stores its order, inside the caller's transaction.

    Runs on a driver connection the order pipeline checked out, in the
    transaction it commits before answering (pipeline.py), not on the
    request-scoped session: the hottest path skips the ORM's per-statement work.
    """
    caller = authenticate_access_token_sql(sql, token)
    return store_order(sql, caller=caller, order=order, settings=settings)


def store_order(
    sql: Sql, *, caller: ConnectedStore, order: OrderIn, settings: Settings
) -> StoredOrder:
    """Creates or updates the order of the caller's store, keyed by (store, orderId)."""
    store = _store_facts(sql, caller=caller, order=order)
    customer = resolve_customer(
        sql,
        profile_id=caller.profile_id,
        default_region=store.country_code,
        email=order.customerEmail,
        phone_number=order.customerPhoneNumber,
        first_name=order.customerFirstName,
        last_name=order.customerLastName,
    )
    values = _columns(sql, order, caller=caller, customer_id=customer.id if customer else None)
    if customer is None:
        row = sql.row(queries.INSERT_ANONYMOUS_ORDER, values)
    else:
        ordered_at = order.createdAt.astimezone(UTC)
        row = sql.row(
            queries.INSERT_ORDER,
            {
                **values,
                "match_email": customer.email,
                "match_phone": customer.phone_number,
                "window_start": sql.time(
                    window_start(ordered_at, settings.attribution_window_days)
                ),
            },
        )
    created = row is not None
    if row is None:
        guarded = values["partner_updated_at"] is not None
        statement = queries.UPDATE_ORDER_UNLESS_NEWER if guarded else queries.UPDATE_ORDER
        row = sql.row(statement, values)
        if row is None:
            return StoredOrder(order_pk=None, created=False, receipt_queued=False)
    order_pk: int = row[0]
    queued = False
    if receipt_due(
        green_invoices=store.green_invoices,
        order_status=values["order_status"],
        phone=order.customerPhoneNumber,
    ):
        queued = queue_receipt(
            sql,
            order_pk=order_pk,
            store_id=caller.store_id,
            order_id=order.orderId,
            store_name=store.name,
            phone=order.customerPhoneNumber or "",
            default_region=store.country_code,
            settings=settings,
        )
    return StoredOrder(order_pk=order_pk, created=created, receipt_queued=queued)


def _store_facts(sql: Sql, *, caller: ConnectedStore, order: OrderIn) -> _StoreFacts:
    if order.store is not None:
        return _StoreFacts(
            *apply_store_profile_sql(sql, store_id=caller.store_id, profile=order.store)
        )
    # Read with the access token, in this same transaction.
    return _StoreFacts(caller.store_name, caller.store_country_code, caller.green_invoices)


def _columns(
    sql: Sql, order: OrderIn, *, caller: ConnectedStore, customer_id: int | None
) -> dict[str, Any]:
    """The order's columns, in the form the driver stores (see db/raw.py)."""
    details = order.orderDetails
    offset = order.createdAt.utcoffset() or timedelta(0)
    now = sql.time(utcnow())
    return {
        "store_id": caller.store_id,
        "profile_id": caller.profile_id,
        "order_id": order.orderId,
        "order_price": int(order.orderPrice),
        "order_currency": order.orderCurrency,
        "order_status": details.orderStatus if details else None,
        "order_type": details.orderType if details else None,
        "ordered_at": sql.time(order.createdAt),
        "ordered_at_offset_minutes": int(offset.total_seconds() // 60),
        "partner_updated_at": sql.time(order.updatedAt),
        "customer_id": customer_id,
        "customer_first_name": order.customerFirstName,
        "customer_last_name": order.customerLastName,
        "customer_email": order.customerEmail,
        "customer_phone_number": order.customerPhoneNumber,
        # orderDetails as given (extra keys too), serialized by pydantic in one pass.
        "details": sql.json_text(details.model_dump_json(exclude_unset=True) if details else "{}"),
        "store_snapshot": sql.json_text(order.store.model_dump_json(exclude_unset=True))
        if order.store
        else None,
        "received_at": now,
        "updated_at": now,
    }


def read_order(session: Session, *, store_id: str, order_id: str) -> dict[str, Any]:
    """GET /v1/orders: the order in its request's field names, behind the receipt gates."""
    store = load_store(session, store_id=store_id)
    if not store.green_invoices:
        raise ReceiptsDisabled()
    order = session.scalar(queries.find_order(store_id=store_id, order_id=order_id))
    if order is None or not order_visible(order, store):
        raise NotFound("No such order, or it is not a closed order with a customer phone.")
    return order_json(order, store)


def order_json(order: Order, store: Store) -> dict[str, Any]:
    """An order in the field names of POST /v1/orders."""
    details = order.details or {}
    return {
        "orderId": order.order_id,
        "orderPrice": str(order.order_price),
        "orderCurrency": order.order_currency,
        "createdAt": local_time(order).isoformat(),
        "updatedAt": order.partner_updated_at.isoformat() if order.partner_updated_at else None,
        "orderStatus": order.order_status,
        "orderType": order.order_type,
        "orderItems": details.get("orderItems") or [],
        "orderPayments": details.get("orderPayments") or [],
        "orderDetails": details,
        "store": store_snapshot(order, store),
        "customerFirstName": order.customer_first_name,
        "customerLastName": order.customer_last_name,
        "customerEmail": order.customer_email,
        "customerPhoneNumber": order.customer_phone_number,
    }


def local_time(order: Order) -> datetime:
    """The order's createdAt with the offset it was sent with."""
    offset = timedelta(minutes=order.ordered_at_offset_minutes or 0)
    try:
        return order.ordered_at.astimezone(timezone(offset))
    except (OverflowError, ValueError):
        return order.ordered_at


def store_snapshot(order: Order, store: Store) -> dict[str, Any]:
    """The store as sent with the order, else the store's current profile, in request names."""
    current = {
        "storeName": store.name,
        "storeAddress": store.address,
        "storeCountryCode": store.country_code,
        "storeCity": store.city,
        "storeState": store.state,
        "storePostalCode": store.postal_code,
        "storePhoneNumber": store.phone_number,
        "storeCurrency": store.currency,
    }
    return {**current, **(order.store_snapshot or {})}


def recent_orders(session: Session, *, store_id: str, limit: int) -> list[dict[str, Any]]:
    """The store's orders with their conversion class, newest first."""
    return [
        {
            "orderId": row.order_id,
            "orderPrice": str(row.order_price),
            "orderCurrency": row.order_currency,
            "orderStatus": row.order_status,
            "conversion": row.conversion,
            "createdAt": row.ordered_at.isoformat(),
        }
        for row in session.execute(queries.recent_orders(store_id=store_id, limit=limit))
    ]
