"""Data-subject access (CONTRACT §12): everything a profile holds about one person.

The person is named as opt-out and erasure name them (an email, a phone read in the
profile's country, §6's normalization); every customer of the profile with that
email or phone is answered, with their orders as stored, whether and by whom they
are opted out, and the receipt texts sent about their orders. An erased person has
no customer left, so the answer is empty.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import matching, person
from partnerlink.audiences.models import OptOut
from partnerlink.customers.models import Customer
from partnerlink.customers.service import customer_json
from partnerlink.orders.models import Order
from partnerlink.orders.service import order_json
from partnerlink.receipts.models import Receipt
from partnerlink.stores.models import Store


def _customer_json(customer: Customer) -> dict[str, Any]:
    """The merchant API's customer, with the id as stored (a number) and its own times."""
    return {
        **customer_json(customer),
        "id": customer.id,
        "createdAt": customer.created_at.isoformat(),
        "updatedAt": customer.updated_at.isoformat(),
    }


def _without_key(link: str) -> str:
    """The receipt link without its query: the key in it opens the receipt page."""
    parts = urlsplit(link)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _receipt_json(receipt: Receipt, order_id: str) -> dict[str, Any]:
    return {
        "orderId": order_id,
        "to": receipt.to_phone,
        "status": receipt.status,
        "link": _without_key(receipt.link),
        "createdAt": receipt.created_at.isoformat(),
        "sentAt": receipt.sent_at.isoformat() if receipt.sent_at else None,
    }


def _opted_out_by(opt_out: OptOut | None) -> list[str]:
    if opt_out is None:
        return []
    return [
        who for who, held in (("merchant", opt_out.by_merchant), ("stop", opt_out.by_stop)) if held
    ]


def export_person(
    session: Session, *, profile_id: str, email: str | None, phone: str | None
) -> list[dict[str, Any]]:
    """One entry per matching customer: customer, orders, optedOut (+ optedOutBy), receipts."""
    who = person(session, profile_id, email, phone)
    found = session.scalars(
        select(Customer).where(*matching(profile_id, who)).order_by(Customer.id)
    ).all()
    answer = []
    for customer in found:
        rows = session.execute(
            select(Order, Store)
            .join(Store, Store.id == Order.store_id)
            .where(Order.profile_id == profile_id, Order.customer_id == customer.id)
            .order_by(Order.ordered_at, Order.id)
        ).all()
        orders = [
            {
                **order_json(order, store),
                "storeId": store.id,
                "conversion": order.conversion,
                "campaignId": order.campaign_id,
            }
            for order, store in rows
        ]
        order_ids = {order.id: order.order_id for order, _store in rows}
        receipts = session.scalars(
            select(Receipt).where(Receipt.order_pk.in_(order_ids)).order_by(Receipt.id)
        ).all()
        opted_out_by = _opted_out_by(session.get(OptOut, customer.id))
        answer.append(
            {
                "customer": _customer_json(customer),
                "orders": orders,
                "optedOut": bool(opted_out_by),
                "optedOutBy": opted_out_by,
                "receipts": [_receipt_json(r, order_ids[r.order_pk]) for r in receipts],
            }
        )
    return answer
