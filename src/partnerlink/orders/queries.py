"""The orders domain's statements, in one place.

POST /v1/orders is the hottest path of the service: its statements are plain
SQL run on the driver's connection (db/raw.py), since SQLAlchemy's per-execute
work cost more CPU than the database's own (measured). The reads below, for
the merchant API and the receipt page, stay ORM statements.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Select, select

from partnerlink.db import sets
from partnerlink.db.raw import Statement
from partnerlink.orders.conversion import (
    EARLIER_ORDER,
    NO_CUSTOMER,
    NO_TOUCH,
    conversion_case,
    latest_touch,
)
from partnerlink.orders.models import Order
from partnerlink.stores.models import Store

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
INSERTED_COLUMNS = (
    "store_id",
    "profile_id",
    "partner_id",
    "order_id",
    "received_at",
    *UPDATED_COLUMNS,
)


# The class of an order, its campaign and its touch's kind (CONTRACT.md §6 and §16,
# orders/conversion.py), computed by the upsert itself. Parameters: the order's
# `customer_id` (NULL: anonymous), the SHA-256 of the customer's normalized email and
# phone, `match_email` and `match_phone` (NULL when it has none: NULL never equals
# anything), the order's `ordered_at` and `window_start`, as far back as the longest
# window reaches (conversion.latest_touch).
def _latest_touch(columns: str) -> str:
    return latest_touch(
        columns,
        match_email=":match_email",
        match_phone=":match_phone",
        ordered_at=":ordered_at",
        window_start=":window_start",
    )


_NO_CUSTOMER = "CAST(:customer_id AS BIGINT) IS NULL"
_EARLIER_ORDER = (
    "EXISTS (SELECT 1 FROM orders AS earlier WHERE earlier.customer_id = :customer_id"
    " AND earlier.profile_id = :profile_id AND earlier.ordered_at < :ordered_at"
    " AND NOT (earlier.store_id = :store_id AND earlier.partner_id = :partner_id"
    " AND earlier.order_id = :order_id))"
)


def _class_and_campaign(campaign: str, kind: str) -> str:
    """The conversion class, campaign and touch kind columns, given the SQL of the latest
    touch's campaign and kind (NULL: none). The rule's CASE is generated from
    conversion.RULES; only each fact's SQL is written here."""
    conversion = conversion_case(
        {
            NO_CUSTOMER: _NO_CUSTOMER,
            NO_TOUCH: f"{campaign} IS NULL",
            EARLIER_ORDER: _EARLIER_ORDER,
        }
    )
    return (
        f"{conversion}, CASE WHEN {_NO_CUSTOMER} THEN NULL ELSE {campaign} END,"
        f" CASE WHEN {_NO_CUSTOMER} THEN NULL ELSE {kind} END"
    )


# Whether the customer has an order newer than this one: that order's class may have been
# computed without this one (new -> returning), so the pipeline re-classifies the customer.
_HAS_LATER = (
    "EXISTS (SELECT 1 FROM orders AS later WHERE later.customer_id = orders.customer_id"
    " AND later.profile_id = orders.profile_id AND later.ordered_at > orders.ordered_at)"
)


# PostgreSQL only: the customer an updated order leaves behind with an order fewer or a
# later one (the stored version had another customer, or an older createdAt), NULL
# otherwise. A subquery of RETURNING reads the statement's snapshot, which still holds
# the row as it was before this statement changed it (a new row is not in it: NULL).
# That customer's other orders may change class (returning -> new), so the pipeline
# classifies its orders again. SQLite's RETURNING sees the new row: there the stored
# version is read before the upsert (orders/upsert.py).
def _leaves_customer(stored: str, customer_id: str, ordered_at: str) -> str:
    """The condition under which the stored version (columns prefixed `stored`) leaves its
    customer with an order fewer or a later one: another customer, or a later createdAt."""
    return (
        f"({stored}customer_id IS NOT NULL AND ({stored}customer_id IS DISTINCT FROM"
        f" {customer_id} OR {stored}ordered_at < {ordered_at}))"
    )


_LEFT_CUSTOMER = (
    "(SELECT before.customer_id FROM orders AS before WHERE before.id = orders.id"
    f" AND {_leaves_customer('before.', 'orders.customer_id', 'orders.ordered_at')})"
)
# SQLite: the same, read before the upsert from the stored version and the new values
# (its RETURNING sees the row as written). Times compare as the text SQLite keeps.
LEFT_CUSTOMER_SQLITE = Statement(
    "SELECT customer_id FROM orders WHERE store_id = :store_id AND partner_id = :partner_id"
    " AND order_id = :order_id AND profile_id = :profile_id"
    f" AND {_leaves_customer('', 'CAST(:customer_id AS INTEGER)', ':ordered_at')}"
)


_CLASS_COLUMNS = ("conversion", "campaign_id", "touch_kind")
_SET = ", ".join(f"{name} = excluded.{name}" for name in (*UPDATED_COLUMNS, *_CLASS_COLUMNS))


def _upsert(*, from_rows: bool, postgres: bool) -> Statement:
    """Creates the order, or updates it unless the stored `updatedAt` is newer; RETURNING
    id, whether the customer has a newer order and (PostgreSQL) the customer the stored
    version leaves behind (`_LEFT_CUSTOMER`).

    One statement for every order, so a batch's upserts travel together (db/raw.py):
    no row comes back when a re-send was older than what is stored. The class and
    campaign are computed for every send, from the data as stored then; the identity
    and `received_at` stay as first stored. An order is keyed by its store, the partner
    that sent it and its id (CONTRACT.md §6): another partner's order with the same id on
    the same store is another order, never updated here.

    `from_rows`: the same for many orders in one statement (PostgreSQL), each read from
    the JSON parameter sets (db/sets.py); RETURNING then names each row's key. Its
    orders must have distinct keys and customers (orders/upsert.py's rounds): every
    order's class is computed as of the statement's start. Its latest touch is read once
    (a LATERAL join), not once for the class, again for the campaign and for the kind; so
    it is for one order (a join on SQLite, a CTE on PostgreSQL).
    """
    columns = ", ".join(INSERTED_COLUMNS)
    values = ", ".join(f":{name}" for name in INSERTED_COLUMNS)
    ahead = ""
    if from_rows:
        selected = f"{values}, {_class_and_campaign('touch.campaign_id', 'touch.kind')}"
        latest = sets.from_rows(_latest_touch("latest.campaign_id, latest.kind"))
        source = (
            f" SELECT {sets.from_rows(selected)} FROM {ORDER_ROWS.source}"
            f" LEFT JOIN LATERAL ({latest}) AS touch ON true"
        )
        returned = f"id, {_HAS_LATER}, {_LEFT_CUSTOMER}, store_id, partner_id, order_id"
    elif postgres:
        # The latest touch read once, ahead (VALUES lets PostgreSQL type the parameters
        # from the columns they fill).
        ahead = f"WITH touch AS MATERIALIZED ({_latest_touch('latest.campaign_id, latest.kind')}) "
        campaign, kind = (f"(SELECT {column} FROM touch)" for column in ("campaign_id", "kind"))
        source = f" VALUES ({values}, {_class_and_campaign(campaign, kind)})"
        returned = f"id, {_HAS_LATER}, {_LEFT_CUSTOMER}"
    else:
        # SQLite reads the latest touch once, joined, for the class, campaign and kind (as
        # scalar subqueries in VALUES it ran once for each). Its parser needs the WHERE to
        # tell the SELECT's end from ON CONFLICT.
        latest = _latest_touch("latest.campaign_id, latest.kind")
        source = (
            f" SELECT {values}, {_class_and_campaign('touch.campaign_id', 'touch.kind')}"
            f" FROM (SELECT 1) AS one LEFT JOIN ({latest}) AS touch ON true WHERE true"
        )
        returned = f"id, {_HAS_LATER}, NULL"
    return Statement(
        f"{ahead}INSERT INTO orders ({columns}, {', '.join(_CLASS_COLUMNS)}){source}"
        # The key includes profile_id, the distribution column (migration 0025).
        f" ON CONFLICT (store_id, partner_id, order_id, profile_id) DO UPDATE SET {_SET}"
        " WHERE excluded.partner_updated_at IS NULL OR orders.partner_updated_at IS NULL"
        f" OR orders.partner_updated_at <= excluded.partner_updated_at RETURNING {returned}"
    )


# The upsert's parameters as PostgreSQL reads them from a JSON parameter set.
_TIME = "timestamptz"
ORDER_ROWS = sets.RowSet(
    {
        "store_id": "text",
        "profile_id": "text",
        "partner_id": "text",
        "order_id": "text",
        "received_at": _TIME,
        "order_price": "bigint",
        "order_currency": "text",
        "order_status": "text",
        "order_type": "text",
        "ordered_at": _TIME,
        "ordered_at_offset_minutes": "integer",
        "partner_updated_at": _TIME,
        "customer_id": "bigint",
        "customer_first_name": "text",
        "customer_last_name": "text",
        "customer_email": "text",
        "customer_phone_number": "text",
        "details": sets.JSON_TEXT,
        "store_snapshot": sets.JSON_TEXT,
        "updated_at": _TIME,
        "match_email": "text",
        "match_phone": "text",
        "window_start": _TIME,
    }
)
UPSERT_ORDER = _upsert(from_rows=False, postgres=False)
UPSERT_ORDER_POSTGRES = _upsert(from_rows=False, postgres=True)
UPSERT_ORDERS = _upsert(from_rows=True, postgres=True)


def find_order(*, store_id: str, partner_id: str, order_id: str) -> Select[Order]:
    """A partner's own order on the store: another partner's with the same id stays unseen."""
    return select(Order).where(
        Order.store_id == store_id, Order.partner_id == partner_id, Order.order_id == order_id
    )


def order_with_store(order_pk: ColumnElement[int]) -> Select[Order, Store]:
    return select(Order, Store).join(Store, Store.id == Order.store_id).where(Order.id == order_pk)


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
