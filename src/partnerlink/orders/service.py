"""Orders: store (create or update) with customer, conversion class and e-receipt; read back.

A batch of POSTs (orders/intake/pipeline.py) is one unit of work, in phases: store
snapshots → customers → order upserts (the conversion class computed inside
the INSERT) → receipt rows. Every batch takes its locks in that order, so
concurrent posts of one order queue up; two batches that still cross give up
within milliseconds and run their orders one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.customers.service import (
    CustomerFields,
    CustomerRecord,
    normalize_fields,
    resolve_customers,
)
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql
from partnerlink.orders import queries
from partnerlink.orders.conversion import identifier_hash, window_start
from partnerlink.orders.facts import OrderFacts, facts_of
from partnerlink.orders.models import Order
from partnerlink.orders.reclassification import mark_returning, reclassify_customers
from partnerlink.orders.schemas import OrderIn
from partnerlink.orders.upsert import upsert_orders
from partnerlink.problems import Forbidden, InvalidToken, NotFound
from partnerlink.receipts.outbox import DueReceipt, queue_receipts, receipt_phone
from partnerlink.receipts.queries import order_pk_of_link
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.stores.service import (
    STORE_PROFILE_COLUMNS,
    apply_store_profile_sql,
    load_store,
    remember_store,
)
from partnerlink.tokens.service import (
    ConnectedStore,
    access_lookup,
    authenticate_access_token_sql,
    connected_store_sql,
    connection_lookup,
)

# The store's whole profile comes along with the token: an order's store snapshot is
# compared with it (stores.service.remember_store), so a batch reads its store once.
_ACCESS_WITH_STORE = access_lookup(("green_invoices", *STORE_PROFILE_COLUMNS))
_CONNECTION_WITH_STORE = connection_lookup(("green_invoices", *STORE_PROFILE_COLUMNS))


class ReceiptsDisabled(Forbidden):
    code = "receipts_disabled"
    detail = "E-receipts are turned off for this store."


@dataclass(frozen=True, slots=True)
class StoredOrder:
    order_pk: int | None  # None: an older version, acknowledged and not applied
    receipt_queued: bool


@dataclass(frozen=True, slots=True)
class OrderPost:
    """One POST /v1/orders as the pipeline carries it: the presented token and the order."""

    token: str
    order: OrderIn


@dataclass(frozen=True, slots=True)
class _StoreFacts:
    name: str
    country_code: str
    green_invoices: bool


OrderAnswer = tuple[bool, Any]  # (True, StoredOrder) or (False, the error for that request)


def accept_orders(sql: Sql, posts: Sequence[OrderPost], *, settings: Settings) -> list[OrderAnswer]:
    """Authenticates and stores a batch of orders inside the caller's transaction.

    The result is as if the orders were stored one after another in arrival
    order (a store snapshot reaches the next order, a customer created by one
    is matched by the next), but the work goes phase by phase (callers and
    store snapshots, customers, orders, receipts), and each phase's
    statements travel together (Sql.first_rows): a batch of 64 orders makes a
    handful of round trips to PostgreSQL rather than some 250. A refused token fails only its
    own order; any other error propagates, and the pipeline rolls the batch
    back and runs each order alone (orders/intake/pipeline.py).

    Runs on a driver connection the order pipeline checked out, in the
    transaction it commits before answering, not on the request-scoped
    session: the hottest path skips the ORM's per-statement work.
    """
    return store_orders(
        sql,
        [facts_of(post.order) for post in posts],
        lambda index: authenticate_access_token_sql(sql, posts[index].token, _ACCESS_WITH_STORE),
        settings=settings,
    )


def authenticate_callers(
    sql: Sql, posts: Sequence[OrderPost]
) -> list[ConnectedStore | InvalidToken]:
    """Each post's caller (the store behind its token, with the store's profile columns
    that `store_orders` needs), or its refusal."""
    found: list[ConnectedStore | InvalidToken] = []
    for post in posts:
        try:
            found.append(authenticate_access_token_sql(sql, post.token, _ACCESS_WITH_STORE))
        except InvalidToken as refused:
            found.append(refused)
    return found


def journaled_caller(sql: Sql, connection_id: str) -> ConnectedStore:
    """The caller of an order acknowledged earlier (orders/intake/journal.py), read as
    `authenticate_callers` reads it; InvalidToken when its connection or store is gone."""
    caller = connected_store_sql(sql, connection_id, _CONNECTION_WITH_STORE)
    if caller is None:
        raise InvalidToken()
    return caller


def store_orders(
    sql: Sql,
    orders: Sequence[OrderFacts],
    caller_of: Callable[[int], ConnectedStore],
    *,
    settings: Settings,
) -> list[OrderAnswer]:
    """Stores orders phase by phase, the work of `accept_orders` after authentication,
    shared with the journal's (orders/intake/journal.py). `caller_of(i)` is the store behind
    order i, read when that order's turn comes: a store snapshot applied by an earlier
    order makes the next look-up read the store again. It raises InvalidToken to refuse
    that order alone."""
    outcomes: list[OrderAnswer] = [(False, None)] * len(orders)
    admitted: list[_Admitted] = []
    for index, order in enumerate(orders):
        try:
            caller = caller_of(index)
            remember_store(sql, caller.store_id, caller.store_columns)
            store = _store_facts(sql, caller=caller, order=order)
        except InvalidToken as refused:
            outcomes[index] = (False, refused)
            continue
        admitted.append(_Admitted(index, order, caller, store))

    rekeyed: set[int] = set()  # customers whose email or phone changed: touches match anew
    customers = resolve_customers(sql, [_customer_of(one) for one in admitted], rekeyed)

    columns = [
        _columns(sql, one.order, caller=one.caller, customer=customer)
        for one, customer in zip(admitted, customers, strict=True)
    ]
    rows = upsert_orders(sql, columns)
    order_pks: list[int | None] = [None if row is None else row[0] for row in rows]
    _reclassify_late(sql, columns, rows, rekeyed)

    due: dict[int, DueReceipt] = {}  # by position in `admitted`
    for position, (one, values, order_pk) in enumerate(
        zip(admitted, columns, order_pks, strict=True)
    ):
        if order_pk is None:  # an older version: acknowledged, not applied
            continue
        to_phone = receipt_phone(
            green_invoices=one.store.green_invoices,
            order_status=values["order_status"],
            phone=one.order.phone_number,
            default_region=one.store.country_code,
        )
        if to_phone is not None:
            due[position] = DueReceipt(
                order_pk=order_pk,
                store_id=one.caller.store_id,
                profile_id=one.caller.profile_id,
                order_id=one.order.order_id,
                store_name=one.store.name,
                to_phone=to_phone,
            )
    queued = dict(zip(due, queue_receipts(sql, list(due.values()), settings=settings), strict=True))

    for position, (one, order_pk) in enumerate(zip(admitted, order_pks, strict=True)):
        outcomes[one.index] = (True, StoredOrder(order_pk, queued.get(position, False)))
    return outcomes


def _reclassify_late(
    sql: Sql,
    columns: list[dict[str, Any]],
    rows: list[Any],
    rekeyed: set[int],
) -> None:
    """Classifies again the orders of customers whose earlier classes were computed without
    data that came now (CONTRACT.md §6). Only then: an order in time order, from a customer
    already known by its identifiers, costs nothing more than its upsert.

    - An email or phone the customer did not have: touches naming it may match now, so
      every order of the customer is classified again.
    - An order older than the customer's newest one: only the fact "an earlier order
      exists" changed, for orders after it, so `new` ones among them become `returning`
      (reclassification.mark_returning); a customer's whole history is not read back (it was:
      a sixth of the worker's time under bench/orders.py's load).
    - A re-sent order that left its customer (another email or phone) or moved later:
      that customer's first order may now be another one (`returning` -> `new`), so the
      customer's orders are classified again. Rare: a re-send mostly changes a status.
    """
    whole: dict[str, set[int]] = {}  # by profile: customers classified again in full
    for values, row in zip(columns, rows, strict=True):
        if row is not None and row[2] is not None:
            whole.setdefault(values["profile_id"], set()).add(row[2])
        if values["customer_id"] in rekeyed:
            whole.setdefault(values["profile_id"], set()).add(values["customer_id"])
    earlier: dict[str, set[int]] = {}
    for values, row in zip(columns, rows, strict=True):
        customer_id = values["customer_id"]
        if (
            customer_id is not None
            and row is not None
            and row[1]
            and customer_id not in whole.get(values["profile_id"], ())
        ):
            earlier.setdefault(values["profile_id"], set()).add(customer_id)
    for profile_id, customer_ids in earlier.items():
        mark_returning(sql, profile_id=profile_id, customer_ids=customer_ids)
    for profile_id, customer_ids in whole.items():
        reclassify_customers(sql, profile_id=profile_id, customer_ids=customer_ids)


@dataclass(frozen=True, slots=True)
class _Admitted:
    """An order whose token was accepted, with the store as that order sees it."""

    index: int  # its place in the batch
    order: OrderFacts
    caller: ConnectedStore
    store: _StoreFacts


def _customer_of(one: _Admitted) -> tuple[str, CustomerFields]:
    """The order's customer record, normalized with the store's country for local numbers."""
    order = one.order
    return one.caller.profile_id, normalize_fields(
        default_region=one.store.country_code,
        email=order.email,
        phone_number=order.phone_number,
        first_name=order.first_name,
        last_name=order.last_name,
        postal_code=order.postal_code,
    )


def _store_facts(sql: Sql, *, caller: ConnectedStore, order: OrderFacts) -> _StoreFacts:
    if order.store is not None:
        return _StoreFacts(
            *apply_store_profile_sql(sql, store_id=caller.store_id, profile=order.store)
        )
    # Read with the access token, in this same transaction.
    return _StoreFacts(caller.store_name, caller.store_country_code, caller.green_invoices)


def _columns(
    sql: Sql,
    order: OrderFacts,
    *,
    caller: ConnectedStore,
    customer: CustomerRecord | None,
) -> dict[str, Any]:
    """The upsert's parameters: the order's columns in the form the driver stores (see
    db/raw.py), and for a known customer what its conversion class is computed from."""
    offset = order.created_at.utcoffset() or timedelta(0)
    now = sql.time(utcnow())
    columns: dict[str, Any] = {
        "store_id": caller.store_id,
        "profile_id": caller.profile_id,
        "partner_id": caller.partner_id,
        "order_id": order.order_id,
        "order_price": int(order.order_price),
        "order_currency": order.order_currency,
        "order_status": order.order_status,
        "order_type": order.order_type,
        "ordered_at": sql.time(order.created_at),
        "ordered_at_offset_minutes": int(offset.total_seconds() // 60),
        "partner_updated_at": sql.time(order.updated_at),
        "customer_id": customer.id if customer else None,
        "customer_first_name": order.first_name,
        "customer_last_name": order.last_name,
        "customer_email": order.email,
        "customer_phone_number": order.phone_number,
        # orderDetails as given (extra keys too).
        "details": sql.json_text(order.details_json or "{}"),
        "store_snapshot": sql.json_text(order.store_json) if order.store_json else None,
        "received_at": now,
        "updated_at": now,
    }
    if customer is None:
        columns.update(match_email=None, match_phone=None, window_start=None)
    else:
        ordered_at = order.created_at.astimezone(UTC)
        columns["match_email"] = identifier_hash(customer.email)
        columns["match_phone"] = identifier_hash(customer.phone_number)
        columns["window_start"] = sql.time(window_start(ordered_at))
    return columns


def read_order(
    session: Session, *, store_id: str, partner_id: str, order_id: str
) -> tuple[Order, Store]:
    """GET /v1/orders: the calling partner's own order and its store, behind the receipt
    gates; another partner's order on the same store is unknown here."""
    store = load_store(session, store_id=store_id)
    if not store.green_invoices:
        raise ReceiptsDisabled()
    order = session.scalar(
        queries.find_order(store_id=store_id, partner_id=partner_id, order_id=order_id)
    )
    if order is None or not order_visible(order, store):
        raise NotFound("No such order, or it is not a closed order with a customer phone.")
    return order, store


def order_visible(order: Order, store: Store) -> bool:
    """The gates of GET /v1/orders and of the receipt page, checked when they are opened:
    the e-receipt rule (receipts/outbox.py) holds for the order as it stands now."""
    due_to = receipt_phone(
        green_invoices=store.green_invoices,
        order_status=order.order_status,
        phone=order.customer_phone_number,
        default_region=store.country_code,
    )
    return due_to is not None


def open_receipt(session: Session, *, order_id: str, key: str | None) -> tuple[Order, Store] | None:
    """The order behind a receipt link and its store, or None (unknown, wrong key, or
    gated off): one statement."""
    order_pk = order_pk_of_link(order_id=order_id, key=key)
    if order_pk is None:
        return None
    row = session.execute(queries.order_with_store(order_pk)).first()
    if row is None:
        return None
    order, store = row
    return (order, store) if order_visible(order, store) else None


def recent_orders(session: Session, *, store_id: str, limit: int) -> list[Any]:
    """The store's orders with their conversion class, newest first."""
    return list(session.execute(queries.recent_orders(store_id=store_id, limit=limit)))
