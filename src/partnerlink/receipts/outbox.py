"""The e-receipt rule (SPEC.md) and the receipt rows an order writes (the outbox).

A receipt row is written in the same transaction as the order that causes it
(transactional outbox): orders calls `queue_receipts` on its own connection, one
statement for the whole batch; the worker (receipts/tasks.py) sends it later.
`receipts.order_pk` is unique, so an order has one receipt, hence one SMS,
whatever races or re-sends happen.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from partnerlink.customers.normalize import normalize_phone
from partnerlink.db import sets
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.security.secrets import digest
from partnerlink.settings import Settings

CLOSED = "CLOSED"
PENDING, SENT, FAILED = "pending", "sent", "failed"
KEY_BYTES = 16  # 128 bits: the link cannot be guessed from the partner's order id


def is_closed(order_status: str | None) -> bool:
    """`orderStatus` CLOSED, in any letter case ("closed", "Closed"); the order keeps it as sent."""
    return order_status is not None and order_status.isascii() and order_status.upper() == CLOSED


def receipt_phone(
    *,
    green_invoices: bool,
    order_status: str | None,
    phone: str | None,
    default_region: str | None,
) -> str | None:
    """The number an e-receipt goes to (E.164), or None when none is due.

    The three conditions of SPEC.md: receipts on, order CLOSED (in any letter
    case), a customer phone. A phone that does not parse (in the store's country when it has no
    `+`) counts as none (CONTRACT.md §6): no receipt, no SMS.
    """
    if not green_invoices or not is_closed(order_status):
        return None
    return normalize_phone(phone, default_region)


def receipt_link(settings: Settings, *, order_id: str, key: str) -> str:
    return f"{settings.effective_receipt_url}/inv/{quote(order_id, safe='')}?k={key}"


@dataclass(frozen=True, slots=True)
class DueReceipt:
    """A stored order that meets the e-receipt rule, with what its message needs."""

    order_pk: int
    store_id: str
    profile_id: str
    order_id: str  # the partner's: kept on the receipt for messages, logs and `sms list`
    store_name: str
    to_phone: str  # E.164, from receipt_phone


def queue_receipts(sql: Sql, due: Sequence[DueReceipt], *, settings: Settings) -> list[bool]:
    """Writes each order's receipt unless it has one; True where this call wrote it.

    On PostgreSQL the inserts are one statement (db/sets.py), which answers the orders it
    wrote a receipt for: where two of them are one order (sent twice in a batch), the
    first is the one that wrote it, as one insert after another would have.
    """
    now = sql.time(utcnow())
    rows = [_receipt_values(one, now, settings) for one in due]
    if not sql.postgres or len(rows) < 2:
        return [row is not None for row in sql.first_rows(_INSERT_RECEIPT, rows)]
    written = {
        order_pk for (order_pk,) in sql.all_rows(_INSERT_RECEIPTS, _RECEIPT_ROWS.parameter(rows))
    }
    queued: list[bool] = []
    for one in due:
        queued.append(one.order_pk in written)
        written.discard(one.order_pk)
    return queued


def _receipt_values(due: DueReceipt, now: object, settings: Settings) -> dict[str, object]:
    key = secrets.token_urlsafe(KEY_BYTES)
    link = receipt_link(settings, order_id=due.order_id, key=key)
    return {
        "order_pk": due.order_pk,
        "order_id": due.order_id,
        "store_id": due.store_id,
        "profile_id": due.profile_id,
        "key_hash": digest(key),
        "to_phone": due.to_phone,
        "body": f"Your receipt from {due.store_name}: {link}",
        "link": link,
        "status": PENDING,
        "now": now,
    }


# ON CONFLICT (order_pk, profile_id) DO NOTHING: an order's first receipt is its only one
# (the key carries profile_id, the distribution column: migration 0025).
_RECEIPT_COLUMNS = (
    "order_pk, order_id, store_id, profile_id, key_hash, to_phone, body, link, status,"
    " last_error, attempts, next_attempt_at, created_at"
)
_RECEIPT_VALUES = (
    ":order_pk, :order_id, :store_id, :profile_id, :key_hash, :to_phone, :body, :link, :status,"
    " NULL, 0, :now, :now"
)
_INSERT_RECEIPT = Statement(
    f"INSERT INTO receipts ({_RECEIPT_COLUMNS}) VALUES ({_RECEIPT_VALUES})"
    " ON CONFLICT (order_pk, profile_id) DO NOTHING RETURNING id"
)
# Many at once (PostgreSQL): DO NOTHING also skips a second row of one order in the same
# statement, so each order still gets one receipt.
_RECEIPT_ROWS = sets.RowSet(
    {
        "order_pk": "bigint",
        "order_id": "text",
        "store_id": "text",
        "profile_id": "text",
        "key_hash": "text",
        "to_phone": "text",
        "body": "text",
        "link": "text",
        "status": "text",
        "now": "timestamptz",
    }
)
_INSERT_RECEIPTS = Statement(
    f"INSERT INTO receipts ({_RECEIPT_COLUMNS})"
    f" SELECT {sets.from_rows(_RECEIPT_VALUES)}"
    f" FROM {_RECEIPT_ROWS.source}"
    " ON CONFLICT (order_pk, profile_id) DO NOTHING RETURNING order_pk"
)
