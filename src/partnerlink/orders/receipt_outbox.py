"""The e-receipt rule (SPEC.md) and the receipt rows an order writes (the outbox).

A receipt row is written in the same transaction as the order that causes it
(transactional outbox); the worker sends it later. `receipts.order_pk` is
unique, so an order has one receipt, hence one SMS, whatever races or re-sends
happen.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from partnerlink.customers.normalize import normalize_phone
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.orders.models import Order
from partnerlink.security.secrets import digest
from partnerlink.settings import Settings
from partnerlink.stores.models import Store

log = logging.getLogger("partnerlink.receipts")

CLOSED = "CLOSED"
PENDING, SENT, FAILED = "pending", "sent", "failed"
UNUSABLE_NUMBER = "unusable phone number: not sent"
KEY_BYTES = 16  # 128 bits: the link cannot be guessed from the partner's order id


def receipt_due(*, green_invoices: bool, order_status: str | None, phone: str | None) -> bool:
    """The three conditions of SPEC.md: receipts on, order CLOSED, a customer phone."""
    return bool(green_invoices) and order_status == CLOSED and bool(phone and phone.strip())


def order_visible(order: Order, store: Store) -> bool:
    """The gates of GET /v1/orders and of the receipt page, checked when they are opened."""
    return receipt_due(
        green_invoices=store.green_invoices,
        order_status=order.order_status,
        phone=normalize_phone(order.customer_phone_number, store.country_code),
    )


def receipt_link(settings: Settings, *, order_id: str, key: str) -> str:
    return f"{settings.effective_receipt_url}/inv/{quote(order_id, safe='')}?k={key}"


@dataclass(frozen=True, slots=True)
class DueReceipt:
    """A stored order that meets the e-receipt rule, with what its message needs."""

    order_pk: int
    store_id: str
    order_id: str
    store_name: str
    phone: str
    default_region: str | None


def queue_receipts(sql: Sql, due: Sequence[DueReceipt], *, settings: Settings) -> list[bool]:
    """Writes each order's receipt unless it has one; True where this call wrote it.

    The inserts travel together (one round trip on PostgreSQL). An unusable
    number is recorded as a failed receipt with its reason: no SMS.
    """
    now = sql.time(utcnow())
    rows = [_receipt_values(one, now, settings) for one in due]
    written = [row is not None for row in sql.first_rows(_INSERT_RECEIPT, rows)]
    for one, row, wrote in zip(due, rows, written, strict=True):
        if wrote and row["to_phone"] is None:
            log.info("e-receipt for order %s not sent: unusable phone number", one.order_id)
    return written


def _receipt_values(due: DueReceipt, now: object, settings: Settings) -> dict[str, object]:
    key = secrets.token_urlsafe(KEY_BYTES)
    link = receipt_link(settings, order_id=due.order_id, key=key)
    to_phone = normalize_phone(due.phone, due.default_region)
    return {
        "order_pk": due.order_pk,
        "store_id": due.store_id,
        "key_hash": digest(key),
        "to_phone": to_phone,
        "body": f"Your receipt from {due.store_name}: {link}",
        "link": link,
        "status": PENDING if to_phone else FAILED,
        "last_error": None if to_phone else UNUSABLE_NUMBER,
        "now": now,
    }


# ON CONFLICT (order_pk) DO NOTHING: an order's first receipt is its only one.
_INSERT_RECEIPT = Statement(
    "INSERT INTO receipts (order_pk, store_id, key_hash, to_phone, body, link, status,"
    " last_error, attempts, next_attempt_at, created_at) VALUES (:order_pk, :store_id,"
    " :key_hash, :to_phone, :body, :link, :status, :last_error, 0, :now, :now)"
    " ON CONFLICT (order_pk) DO NOTHING RETURNING id"
)
