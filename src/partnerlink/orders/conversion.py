"""Conversion class of an order (CONTRACT.md §6): a function of the stored data.

- `anonymous`: the order has neither a usable email nor a usable phone;
- `new`: the customer had an ad touch of the profile within the window before
  the order (a touch whose email or phone hash is the hash of the customer's
  normalized email or phone), and no order in the profile with an older
  `createdAt`;
- `returning`: such a touch, and such an earlier order;
- `organic`: otherwise.

The order's `campaign_id` is the campaign of the latest such touch (the
greatest campaign id among touches at the same instant), NULL when none.

The rule is written once, as `RULES`: the Python form (`classify`) and the SQL
form (`conversion_case`, the CASE of the upsert) are both read from it. An
order's class is computed inside its own upsert (`queries.UPSERT_ORDER`),
at no extra round trip. Data that arrives late re-classifies the orders it
affects, where it arrives: touches and new identifiers of a customer with
`reclassify_customers` (measurement/, customers/, the pipeline, and a re-sent order
that leaves its customer or moves later), an order older than its customer's newest
order with `mark_returning` (the pipeline).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from partnerlink.customers.queries import identifiers_of
from partnerlink.db.raw import Sql, Statement
from partnerlink.kit.digests import sha256_hex

ANONYMOUS = "anonymous"
ORGANIC = "organic"
NEW = "new"
RETURNING = "returning"
CLASSES = (NEW, RETURNING, ORGANIC, ANONYMOUS)

# The facts the class depends on, each true or false for an order.
NO_CUSTOMER = "no_customer"  # no usable email or phone, so no known customer
NO_TOUCH = "no_touch"  # no touch of the customer's within the window before the order
EARLIER_ORDER = "earlier_order"  # the customer has an order with an older createdAt
# The rule: the first fact that holds gives the class; when none holds, OTHERWISE.
RULES: tuple[tuple[str, str], ...] = (
    (NO_CUSTOMER, ANONYMOUS),
    (NO_TOUCH, ORGANIC),
    (EARLIER_ORDER, RETURNING),
)
OTHERWISE = NEW

_EARLIEST = datetime.min.replace(tzinfo=UTC)
_CHUNK = 500  # ids per IN list


def window_start(created_at: datetime, window_days: int) -> datetime:
    """The earliest touch that still counts for an order made at `created_at`."""
    try:
        return created_at - timedelta(days=window_days)
    except OverflowError:
        return _EARLIEST


def identifier_hash(value: str | None) -> str | None:
    """Lower-case hex SHA-256 of a normalized email or E.164 phone, as ad platforms use."""
    return None if value is None else sha256_hex(value)


def stored_time(value: Any) -> datetime:
    """A UTCDateTime column read on the driver's connection, as an aware datetime."""
    if isinstance(value, str):  # SQLite keeps naive UTC text
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    assert isinstance(value, datetime)
    return value.astimezone(UTC)


def conversion_of(facts: Mapping[str, bool]) -> str:
    """The class `RULES` gives for these facts."""
    return next((conversion for fact, conversion in RULES if facts[fact]), OTHERWISE)


def conversion_case(conditions: Mapping[str, str]) -> str:
    """`RULES` as an SQL CASE expression, each fact given as an SQL condition."""
    whens = "".join(f" WHEN {conditions[fact]} THEN '{conversion}'" for fact, conversion in RULES)
    return f"CASE{whens} ELSE '{OTHERWISE}' END"


def classify(
    ordered_at: datetime,
    first_order_at: datetime,
    touches: Sequence[tuple[datetime, str]],
    window_days: int,
) -> tuple[str, str | None]:
    """(class, campaign) of a known customer's order; `touches` sorted by (time, campaign).
    The campaign is the latest touch's within the window, None when there is none."""
    position = bisect_right(touches, (ordered_at, "\U0010ffff")) - 1
    touched = position >= 0 and touches[position][0] >= window_start(ordered_at, window_days)
    facts = {NO_CUSTOMER: False, NO_TOUCH: not touched, EARLIER_ORDER: first_order_at < ordered_at}
    return conversion_of(facts), (touches[position][1] if touched else None)


def _in_list(prefix: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    names = {f"{prefix}{i}": value for i, value in enumerate(values)}
    return ", ".join(f":{name}" for name in names), names


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def reclassify_customers(
    sql: Sql, *, profile_id: str, customer_ids: Iterable[int], window_days: int
) -> int:
    """Recomputes the class and campaign of every order of these customers from the stored
    data, inside the caller's transaction; answers how many orders changed."""
    ids = sorted(set(customer_ids))
    changed = 0
    for chunk in _chunks(ids):
        changed += _reclassify_chunk(sql, profile_id, chunk, window_days)
    return changed


def _reclassify_chunk(sql: Sql, profile_id: str, ids: Sequence[int], window_days: int) -> int:
    placeholders, params = _in_list("c", ids)
    params["profile_id"] = profile_id
    hashes: dict[int, tuple[str | None, str | None]] = {}
    for customer_id, email, phone in identifiers_of(sql, profile_id=profile_id, ids=ids):
        hashes[customer_id] = (identifier_hash(email), identifier_hash(phone))
    touches_by_key = _touches_by_hash(sql, profile_id, hashes.values())
    orders = sql.all_rows(
        Statement(
            "SELECT id, customer_id, ordered_at, conversion, campaign_id FROM orders"
            f" WHERE profile_id = :profile_id AND customer_id IN ({placeholders})"
        ),
        params,
    )
    by_customer: dict[int, list[tuple[int, datetime, str, str | None]]] = defaultdict(list)
    for order_pk, customer_id, ordered_at, conversion, campaign in orders:
        by_customer[customer_id].append((order_pk, stored_time(ordered_at), conversion, campaign))
    updates: list[dict[str, Any]] = []
    for customer_id, its_orders in by_customer.items():
        keys = [key for key in hashes.get(customer_id, (None, None)) if key is not None]
        touches = sorted({touch for key in keys for touch in touches_by_key.get(key, ())})
        first = min(ordered_at for _, ordered_at, _, _ in its_orders)
        for order_pk, ordered_at, conversion, campaign in its_orders:
            wanted = classify(ordered_at, first, touches, window_days)
            if wanted != (conversion, campaign):
                updates.append({"conversion": wanted[0], "campaign_id": wanted[1], "id": order_pk})
    if updates:
        sql.run_many(_SET_CLASS, updates)
    return len(updates)


def mark_returning(sql: Sql, *, profile_id: str, customer_ids: Iterable[int]) -> int:
    """After an order older than some of its customer's: the customer's `new` orders that
    now have an earlier order become `returning` (their touch and campaign are unchanged:
    an order adds no touch). Answers how many changed."""
    ids = sorted(set(customer_ids))
    changed = 0
    for chunk in _chunks(ids):
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
    "UPDATE orders SET conversion = :conversion, campaign_id = :campaign_id WHERE id = :id"
)


def _touches_by_hash(
    sql: Sql, profile_id: str, hashes: Iterable[tuple[str | None, str | None]]
) -> dict[str, list[tuple[datetime, str]]]:
    """The profile's touches by identifier hash: (time, campaign) of each."""
    keys = sorted({key for pair in hashes for key in pair if key is not None})
    found: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    for chunk in _chunks(keys):
        placeholders, params = _in_list("h", chunk)
        params["profile_id"] = profile_id
        for email_hash, phone_hash, touched_at, campaign in sql.all_rows(
            Statement(
                "SELECT email_sha256, phone_sha256, touched_at, campaign_id FROM touches"
                f" WHERE profile_id = :profile_id AND (email_sha256 IN ({placeholders})"
                f" OR phone_sha256 IN ({placeholders}))"
            ),
            params,
        ):
            touch = (stored_time(touched_at), campaign)
            for key in {email_hash, phone_hash}:
                if key is not None:
                    found[key].append(touch)
    return found
