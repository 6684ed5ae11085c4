"""A batch's order upserts as a few statements on PostgreSQL, not one per order.

An order's upsert (queries.UPSERT_ORDER) reads what earlier orders stored: the same
order sent before (ON CONFLICT, and whether this version is newer), and its customer's
other orders (the conversion class, and whether a newer one needs classifying again).
A statement sees the database as of its start, so one statement for many orders gives
the same result as one after another only when no two of them share an order key or a
customer. The batch is therefore split into rounds: an order goes into the round after
the last one holding an earlier order with its key or its customer, and each round is
one statement (queries.UPSERT_ORDERS); orders of one key or one customer still apply in
arrival order. Under load (the journal's batches of 500, ~800 regular customers in
bench/orders.py) that is about five statements instead of 500; with the look-ups and the
receipts also sent at once (db/sets.py), PostgreSQL's CPU an applied order and the
worker's both fell (bench/orders_journal.py, interleaved runs; figures in bench/README.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from partnerlink.db.raw import Sql
from partnerlink.orders import queries

_Key = tuple[str, str, str]  # store, partner, order id: an order's identity in a profile


def upsert_orders(sql: Sql, columns: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each order's upsert row (id, has a newer order, the customer id the stored version
    leaves with an order fewer or a later one, else None), or None where a stored version
    was newer and nothing was written; as if upserted one after another in order."""
    if not sql.postgres:
        return [_upsert_sqlite(sql, values) for values in columns]
    if len(columns) < 2:
        return sql.first_rows(queries.UPSERT_ORDER_POSTGRES, columns)
    found: list[Any] = [None] * len(columns)
    for positions in rounds(columns):
        by_key = {_key(columns[position]): position for position in positions}
        rows = sql.all_rows(
            queries.UPSERT_ORDERS,
            queries.ORDER_ROWS.parameter([columns[p] for p in positions]),
        )
        for order_pk, has_later, left_customer, *key in rows:
            found[by_key[(key[0], key[1], key[2])]] = (order_pk, has_later, left_customer)
    return found


def _upsert_sqlite(sql: Sql, values: Mapping[str, Any]) -> Any:
    """SQLite's RETURNING sees the row as written, so the customer the stored version leaves
    behind is read first (an in-process look-up by the order's key)."""
    left = sql.row(queries.LEFT_CUSTOMER_SQLITE, values)
    row = sql.row(queries.UPSERT_ORDER, values)
    return None if row is None else (row[0], row[1], left[0] if left else None)


def rounds(columns: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The orders' positions, grouped so that no round holds two orders of one key or one
    customer, and an order's round comes after those of the earlier orders it shares one with."""
    last_of_key: dict[_Key, int] = {}
    last_of_customer: dict[tuple[str, int], int] = {}
    grouped: list[list[int]] = []
    for position, values in enumerate(columns):
        key = _key(values)
        customer = values["customer_id"]
        after = last_of_key.get(key, -1)
        if customer is not None:
            after = max(after, last_of_customer.get((values["profile_id"], customer), -1))
        round_ = after + 1
        if round_ == len(grouped):
            grouped.append([])
        grouped[round_].append(position)
        last_of_key[key] = round_
        if customer is not None:
            last_of_customer[(values["profile_id"], customer)] = round_
    return grouped


def _key(values: Mapping[str, Any]) -> _Key:
    return (values["store_id"], values["partner_id"], values["order_id"])
