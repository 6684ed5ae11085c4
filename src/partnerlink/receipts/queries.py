"""The receipts' look-ups: the order behind a receipt link, and the messages sent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.orders.models import Order
from partnerlink.orders.receipt_outbox import order_visible
from partnerlink.receipts.models import Receipt
from partnerlink.security.secrets import digest
from partnerlink.stores.models import Store


@dataclass(frozen=True)
class OpenedReceipt:
    order: Order
    store: Store


def open_receipt(session: Session, *, order_id: str, key: str | None) -> OpenedReceipt | None:
    """The order behind a receipt link, or None (unknown, wrong key, or gated off).

    The look-up is by the key's SHA-256 digest, an exact match on a value derived
    from a 128-bit secret, so timing reveals nothing usable.
    """
    if not key or len(key) > 100:
        return None
    row = session.execute(
        select(Order, Store)
        .join(Receipt, Receipt.order_pk == Order.id)
        .join(Store, Store.id == Order.store_id)
        .where(Receipt.key_hash == digest(key))
    ).first()
    if row is None:
        return None
    order, store = row
    if order.order_id != order_id or not order_visible(order, store):
        return None
    return OpenedReceipt(order=order, store=store)


def list_messages(session: Session, *, limit: int) -> list[dict[str, Any]]:
    """The receipt messages, newest first, in the shape of `partnerlink sms list`."""
    rows = session.execute(
        select(Receipt, Order.order_id)
        .join(Order, Order.id == Receipt.order_pk)
        .order_by(Receipt.created_at.desc(), Receipt.id.desc())
        .limit(limit)
    ).all()
    return [
        {
            "to": receipt.to_phone,
            "body": receipt.body,
            "link": receipt.link,
            "orderId": order_id,
            "storeId": receipt.store_id,
            "status": receipt.status,
            "createdAt": _iso(receipt.created_at),
        }
        for receipt, order_id in rows
    ]


def _iso(value: datetime) -> str:
    return value.isoformat()
