"""Late data re-classifies the orders it affects (CONTRACT.md §6, §16), by the rule of
orders/conversion.py, inside the caller's transaction.

- `reclassify_customers`: every order of some customers (or only those made in given
  periods) classified again: after touches are imported or a campaign's window moves
  (measurement/), after a customer's identifiers change (customers/, the pipeline), and
  after a re-sent order leaves its customer or moves later (the pipeline). PostgreSQL
  classifies them all in one statement by the rule's SQL form, the upsert's
  (`_RECLASSIFY`); SQLite, in process, reads their orders and touches and applies
  `conversion.classify`. tests/measurement/test_reclassification.py holds both to one
  oracle.
- `mark_returning`: after an order older than some of its customer's, the customer's
  `new` orders that now have an earlier order become `returning`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from partnerlink.customers.queries import identifiers_of
from partnerlink.db import sets
from partnerlink.db.raw import Sql, Statement
from partnerlink.orders.conversion import (
    CLICK,
    EARLIER_ORDER,
    EARLIEST,
    LATEST,
    LONGEST_WINDOW_DAYS,
    NEW,
    NO_CUSTOMER,
    NO_TOUCH,
    RETURNING,
    CountedTouch,
    classify,
    conversion_case,
    identifier_hash,
    latest_touch,
    stored_time,
)

_CHUNK = 500  # ids per IN list (SQLite); PostgreSQL takes them as one array
_POSTGRES_CHUNK = 10_000

Identifiers = Mapping[int, tuple[str | None, str | None]]  # customer id: email, phone hashes
# customer id: the periods (first, last instant) outside which none of its orders can change
Periods = Mapping[int, Sequence[tuple[datetime, datetime]]]
# SQLite: an identifier hash (one field's, email or phone): the touches carrying it
TouchesByHash = dict[str | None, list[CountedTouch]]


def _in_list(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    names = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names), names


def _chunks(sql: Sql | None, values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    size = _POSTGRES_CHUNK if sql is not None and sql.postgres else _CHUNK
    for start in range(0, len(values), size):
        yield values[start : start + size]


def reclassify_customers(
    sql: Sql,
    *,
    profile_id: str,
    customer_ids: Iterable[int],
    hashes: Identifiers | None = None,
    periods: Periods | None = None,
) -> int:
    """Recomputes the class, campaign and touch kind of every order of these customers from
    the stored data, inside the caller's transaction; answers how many orders changed.
    `hashes`: the customers' identifier hashes when the caller has them (measurement's
    match of touches to customers); read here otherwise. `periods`: when the caller knows
    that only a customer's orders made in some periods can change (those new touches'
    windows hold, or that a window change added or took away), only those are classified.

    PostgreSQL classifies them all in one statement by the rule's SQL form, the upsert's
    (`_RECLASSIFY`); SQLite, in process, reads their orders and touches and applies
    `classify`. tests/measurement/test_reclassification.py holds both to one oracle."""
    ids = sorted(set(customer_ids))
    changed = 0
    for chunk in _chunks(sql, ids):
        found = hashes if hashes is not None else _hashes_of(sql, profile_id, chunk)
        spans = {c: _merged(periods[c]) if periods else [_ALWAYS] for c in chunk}
        if not sql.postgres:
            changed += _reclassify_chunk(sql, profile_id, chunk, found, spans)
            continue
        rows = [
            {
                "customer_id": c,
                "match_email": email,
                "match_phone": phone,
                "since": since,
                "until": until,
            }
            for c in chunk
            for email, phone in (found.get(c, (None, None)),)
            for since, until in spans[c]
        ]
        changed += sql.run(
            _RECLASSIFY, {**_CUSTOMER_ROWS.parameter(rows), "profile_id": profile_id}
        )
    return changed


def _hashes_of(sql: Sql, profile_id: str, ids: Sequence[int]) -> Identifiers:
    return {
        customer_id: (identifier_hash(email), identifier_hash(phone))
        for customer_id, email, phone in identifiers_of(sql, profile_id=profile_id, ids=ids)
    }


_ALWAYS = (EARLIEST, LATEST)


def _merged(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """Periods that overlap joined into one, in time order."""
    given = list(spans)
    if len(given) == 1:  # most customers: one touch's window
        return given
    merged: list[tuple[datetime, datetime]] = []
    for since, until in sorted(given):
        if merged and since <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], until))
        else:
            merged.append((since, until))
    return merged


def _within(moment: datetime, spans: Sequence[tuple[datetime, datetime]]) -> bool:
    return any(since <= moment <= until for since, until in spans)


def _reclassify_chunk(
    sql: Sql,
    profile_id: str,
    ids: Sequence[int],
    hashes: Identifiers,
    spans: Mapping[int, Sequence[tuple[datetime, datetime]]],
) -> int:
    by_email, by_phone = _touches_by_hash(sql, profile_id, [hashes[c] for c in ids if c in hashes])
    placeholders, params = _in_list("c", ids)
    params["profile_id"] = profile_id
    orders = sql.all_rows(
        Statement(
            "SELECT id, customer_id, ordered_at, conversion, campaign_id, touch_kind FROM orders"
            f" WHERE profile_id = :profile_id AND customer_id IN ({placeholders})"
        ),
        params,
    )
    by_customer: dict[int, list[tuple[int, datetime, tuple[str, str | None, str | None]]]]
    by_customer = defaultdict(list)
    for order_pk, customer_id, ordered_at, *stored in orders:
        by_customer[customer_id].append((order_pk, stored_time(ordered_at), tuple(stored)))
    updates: list[dict[str, Any]] = []
    for customer_id, its_orders in by_customer.items():
        email, phone = hashes.get(customer_id, (None, None))
        touches = sorted({*by_email.get(email, ()), *by_phone.get(phone, ())})
        first = min(ordered_at for _, ordered_at, _ in its_orders)
        for order_pk, ordered_at, stored in its_orders:
            if not _within(ordered_at, spans[customer_id]):
                continue
            wanted = classify(ordered_at, first, touches)
            if wanted != stored:
                conversion, campaign, kind = wanted
                updates.append(
                    {
                        "id": order_pk,
                        "conversion": conversion,
                        "campaign_id": campaign,
                        "touch_kind": kind,
                    }
                )
    sql.run_many(_SET_CLASS, updates)
    return len(updates)


def mark_returning(sql: Sql, *, profile_id: str, customer_ids: Iterable[int]) -> int:
    """After an order older than some of its customer's: the customer's `new` orders that
    now have an earlier order become `returning` (their touch and campaign are unchanged:
    an order adds no touch). Answers how many changed."""
    ids = sorted(set(customer_ids))
    changed = 0
    for chunk in _chunks(None, ids):
        placeholders, params = _in_list("c", chunk)
        params["profile_id"] = profile_id
        changed += sql.run(
            Statement(
                f"UPDATE orders SET conversion = '{RETURNING}' WHERE profile_id = :profile_id"
                f" AND customer_id IN ({placeholders}) AND conversion = '{NEW}'"
                " AND EXISTS (SELECT 1 FROM orders AS earlier"
                " WHERE earlier.profile_id = orders.profile_id"
                " AND earlier.customer_id = orders.customer_id"
                " AND earlier.ordered_at < orders.ordered_at)"
            ),
            params,
        )
    return changed


_SET_CLASS = Statement(
    "UPDATE orders SET conversion = :conversion, campaign_id = :campaign_id,"
    " touch_kind = :touch_kind WHERE id = :id"
)
# PostgreSQL: every order of the customers (each with its identifier hashes and a period,
# the rows `r`: one array a column, db/sets.py) classified by the rule's SQL form, the
# upsert's (conversion_case from RULES, latest_touch), and written where it changed.
_CUSTOMER_ROWS = sets.RowSet(
    {
        "customer_id": "bigint",
        "match_email": "text",
        "match_phone": "text",
        "since": "timestamptz",
        "until": "timestamptz",
    }
)
_LATEST_TOUCH = latest_touch(
    "latest.campaign_id, latest.kind",
    match_email="r.match_email",
    match_phone="r.match_phone",
    ordered_at="o.ordered_at",
    window_start=f"o.ordered_at - interval '{LONGEST_WINDOW_DAYS} days'",
)
_CLASS = conversion_case(
    {
        NO_CUSTOMER: "false",
        NO_TOUCH: "touch.campaign_id IS NULL",
        EARLIER_ORDER: "EXISTS (SELECT 1 FROM orders AS earlier"
        " WHERE earlier.customer_id = o.customer_id AND earlier.profile_id = o.profile_id"
        " AND earlier.ordered_at < o.ordered_at)",
    }
)
# Each order's class computed once (OFFSET 0 keeps PostgreSQL from pulling the subquery up
# and writing the CASE, and the look-up of an earlier order in it, into the filter again).
_CLASSIFIED = (
    "SELECT o.id, o.conversion AS was, o.campaign_id AS was_campaign, o.touch_kind AS was_kind,"
    f" {_CLASS} AS conversion, touch.campaign_id, touch.kind"
    f" FROM {_CUSTOMER_ROWS.source} JOIN orders AS o"
    " ON o.profile_id = :profile_id AND o.customer_id = r.customer_id"
    " AND o.ordered_at >= r.since AND o.ordered_at <= r.until"
    f" LEFT JOIN LATERAL ({_LATEST_TOUCH}) AS touch ON true OFFSET 0"
)
_RECLASSIFY = Statement(
    "WITH w AS MATERIALIZED (SELECT id, conversion, campaign_id, kind"
    f" FROM ({_CLASSIFIED}) AS c WHERE (was, was_campaign, was_kind)"
    " IS DISTINCT FROM (conversion, campaign_id, kind))"
    # Only the orders whose class changes meet the table again, by key, to be written.
    " UPDATE orders SET conversion = w.conversion, campaign_id = w.campaign_id,"
    " touch_kind = w.kind FROM w WHERE orders.id = w.id AND orders.profile_id = :profile_id"
)


def _touches_by_hash(
    sql: Sql, profile_id: str, hashes: Iterable[tuple[str | None, str | None]]
) -> tuple[TouchesByHash, TouchesByHash]:
    """The profile's touches carrying the customers' hashes: (by email hash, by phone
    hash), each matched in its own column, as the upsert's look-up matches them
    (conversion.latest_touch). Two reads, not one condition (email OR phone): SQLite
    scanned every touch for each chunk; and a column no customer of the chunk has a hash
    for is not read at all (on a file with statistics, SQLite scanned every touch for a
    phone look-up when no touch carried a phone: all their NULLs count as one key)."""
    pairs = list(hashes)
    found: tuple[TouchesByHash, TouchesByHash] = (defaultdict(list), defaultdict(list))
    for side, column in enumerate(("email_sha256", "phone_sha256")):
        keys = sorted({key for pair in pairs if (key := pair[side]) is not None})
        for chunk in _chunks(None, keys):
            placeholders, params = _in_list("h", chunk)
            params["profile_id"] = profile_id
            rows = sql.all_rows(
                Statement(
                    f"SELECT {column}, touched_at, campaign_id, kind, counts_until FROM touches"
                    f" WHERE {column} IN ({placeholders}) AND profile_id = :profile_id"
                ),
                params,
            )
            for key, touched_at, campaign, kind, until in rows:
                found[side][key].append(
                    CountedTouch(
                        stored_time(touched_at), campaign, kind == CLICK, stored_time(until)
                    )
                )
    return found
