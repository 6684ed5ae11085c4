"""Conversion class of an order (CONTRACT.md §6): a function of the stored data.

- `anonymous`: the order has neither a usable email nor a usable phone;
- `new`: the customer had an ad touch of the profile that still counted when the
  order was made (a touch whose email hash is the hash of the customer's normalized
  email, or whose phone hash is that of their phone, each in its own field, made at
  most its campaign's window of its kind, click or view, before the order: CONTRACT.md
  §16), and no order in the profile with an older `createdAt`;
- `returning`: such a touch, and such an earlier order;
- `organic`: otherwise.

The order's `campaign_id` is the campaign of the latest such touch (the
greatest campaign id among touches at the same instant, then a click before a
view), NULL when none; `touch_kind` is that touch's kind.

Each touch carries the end of its window, `counts_until` (its time plus its
campaign's window of its kind, written by measurement and moved when the campaign's
window changes), so that an order's statement reads the window from the touch
alone and never the campaigns table, which is measurement's.

The rule is written once, as `RULES`: the Python form (`classify`) and the SQL
form (`conversion_case`, the CASE of the upsert) are both read from it. An
order's class is computed inside its own upsert (`queries.UPSERT_ORDER`),
at no extra round trip. Data that arrives late re-classifies the orders it
affects, where it arrives (orders/reclassification.py: `reclassify_customers` and
`mark_returning`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from partnerlink.kit.digests import sha256_hex

ANONYMOUS = "anonymous"
ORGANIC = "organic"
NEW = "new"
RETURNING = "returning"
CLASSES = (NEW, RETURNING, ORGANIC, ANONYMOUS)

# The facts the class depends on, each true or false for an order.
NO_CUSTOMER = "no_customer"  # no usable email or phone, so no known customer
NO_TOUCH = "no_touch"  # no touch of the customer's whose window holds the order
EARLIER_ORDER = "earlier_order"  # the customer has an order with an older createdAt
# The rule: the first fact that holds gives the class; when none holds, OTHERWISE.
RULES: tuple[tuple[str, str], ...] = (
    (NO_CUSTOMER, ANONYMOUS),
    (NO_TOUCH, ORGANIC),
    (EARLIER_ORDER, RETURNING),
)
OTHERWISE = NEW

# A touch's kind (CONTRACT.md §16): which of its campaign's two windows it has.
CLICK = "click"
VIEW = "view"
KINDS = (CLICK, VIEW)
# The longest window a touch can have (clickWindowDays is at most 90): an order looks no
# further back for its touches.
LONGEST_WINDOW_DAYS = 90

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


class CountedTouch(NamedTuple):
    """A touch as the rule reads it. Sorted, the latest comes last: at one instant the
    greatest campaign id, then a click after a view (the upsert's ORDER BY, reversed)."""

    touched_at: datetime
    campaign_id: str
    is_click: bool
    counts_until: datetime  # the last instant its window holds

    @property
    def kind(self) -> str:
        return CLICK if self.is_click else VIEW


def window_start(created_at: datetime) -> datetime:
    """The earliest touch that may still count for an order made at `created_at`."""
    try:
        return created_at - timedelta(days=LONGEST_WINDOW_DAYS)
    except OverflowError:
        return EARLIEST


def counts_until(touched_at: datetime, window_days: int) -> datetime:
    """The end of a touch's window: its time plus its campaign's window of its kind."""
    try:
        return touched_at + timedelta(days=window_days)
    except OverflowError:
        return LATEST


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


# The latest touch whose window holds an order, in SQL (the upsert's, queries.py, and
# PostgreSQL's re-classification below): a backward walk of the identifier's index
# (ix_touches_email_sha256, ix_touches_phone_sha256) from the order's time, by email and by
# phone, the later of the two. Written as one condition (email OR phone), the planner
# scanned every touch of a small table twice an order (seen on bench/orders.py's 267
# touches: a sequential scan per order in the worker's profile).
# The order ix_touches_email_sha256 and ix_touches_phone_sha256 hold after their key
# (migration 0038): each walk reads its first entry and sorts nothing.
_LATEST_FIRST = "ORDER BY {0}touched_at DESC, {0}campaign_id DESC, {0}kind"  # click < view


def latest_touch(
    columns: str, *, match_email: str, match_phone: str, ordered_at: str, window_start: str
) -> str:
    """SELECT `columns` (of `latest`: touched_at, campaign_id, kind) of the latest touch of
    the profile (`:profile_id`) whose window holds the order, each argument an SQL
    expression: the customer's identifier hashes, the order's time, the earliest touch."""
    by = [
        "SELECT touches.touched_at, touches.campaign_id, touches.kind FROM touches"
        f" WHERE touches.{column} = {value} AND touches.profile_id = :profile_id"
        f" AND touches.touched_at >= {window_start} AND touches.touched_at <= {ordered_at}"
        f" AND touches.counts_until >= {ordered_at} {_LATEST_FIRST.format('touches.')} LIMIT 1"
        for column, value in (("email_sha256", match_email), ("phone_sha256", match_phone))
    ]
    return (
        f"SELECT {columns} FROM (SELECT * FROM ({by[0]}) AS by_email"
        f" UNION ALL SELECT * FROM ({by[1]}) AS by_phone) AS latest"
        f" {_LATEST_FIRST.format('latest.')} LIMIT 1"
    )


def classify(
    ordered_at: datetime, first_order_at: datetime, touches: Sequence[CountedTouch]
) -> tuple[str, str | None, str | None]:
    """(class, campaign, kind) of a known customer's order; `touches` sorted. The campaign
    and kind are the latest touch's whose window holds the order, None when none does."""
    earliest = window_start(ordered_at)
    position = bisect_right(touches, (ordered_at, "\U0010ffff"))
    touch = None
    while position > 0 and touch is None:
        position -= 1
        if touches[position].touched_at < earliest:
            break
        if touches[position].counts_until >= ordered_at:
            touch = touches[position]
    facts = {
        NO_CUSTOMER: False,
        NO_TOUCH: touch is None,
        EARLIER_ORDER: first_order_at < ordered_at,
    }
    if touch is None:
        return conversion_of(facts), None, None
    return conversion_of(facts), touch.campaign_id, touch.kind
