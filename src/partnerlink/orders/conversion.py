"""Conversion class of an order (CONTRACT.md §6), fixed when the order is first stored.

The class is a SQL expression evaluated inside the INSERT of the order itself
(`queries.UPSERT_ORDER`), so that it costs no extra round-trip and is computed
only by the insert that wins when the same order arrives many times at once:

- `anonymous`: the order has neither a usable email nor a usable phone;
- `new`: the customer (matched by its normalized email or phone) had an ad
  touch of the profile within the window before the order, and no order in
  the profile made no later than this one;
- `returning`: such a touch, and such an earlier order;
- `organic`: otherwise.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
