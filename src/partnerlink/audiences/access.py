"""Data-subject access (CONTRACT §12): everything a profile holds about one person.

The person is named as opt-out and erasure name them (an email, a phone read in the
profile's country, §6's normalization); every customer of the profile with that
email or phone is answered, with their orders as stored, whether and by whom they
are opted out, and the receipt texts sent about their orders. An erased person has
no customer left, so the answer is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import matching, person
from partnerlink.audiences.models import OptOut
from partnerlink.customers.models import Customer
from partnerlink.orders.models import Order
from partnerlink.receipts.models import Receipt
from partnerlink.stores.models import Store


def _opted_out_by(opt_out: OptOut | None) -> list[str]:
    if opt_out is None:
        return []
    return [
        who for who, held in (("merchant", opt_out.by_merchant), ("stop", opt_out.by_stop)) if held
    ]


@dataclass(frozen=True)
class PersonData:
    """One matching customer, with their orders (and stores), opt-out and receipts sent."""

    customer: Customer
    orders: list[tuple[Order, Store]]
    opted_out_by: list[str]
    receipts: list[tuple[Receipt, str]]  # with the partner's order id of each


def export_person(
    session: Session, *, profile_id: str, email: str | None, phone: str | None
) -> list[PersonData]:
    """Every customer of the profile with the person's email or phone, oldest first."""
    who = person(session, profile_id, email, phone)
    found = session.scalars(
        select(Customer).where(*matching(profile_id, who)).order_by(Customer.id)
    ).all()
    answer = []
    for customer in found:
        rows = [
            (order, store)
            for order, store in session.execute(
                select(Order, Store)
                .join(Store, Store.id == Order.store_id)
                .where(Order.profile_id == profile_id, Order.customer_id == customer.id)
                .order_by(Order.ordered_at, Order.id)
            )
        ]
        order_ids = {order.id: order.order_id for order, _store in rows}
        receipts = session.scalars(
            select(Receipt).where(Receipt.order_pk.in_(order_ids)).order_by(Receipt.id)
        ).all()
        answer.append(
            PersonData(
                customer=customer,
                orders=rows,
                opted_out_by=_opted_out_by(session.get(OptOut, customer.id)),
                receipts=[(r, order_ids[r.order_pk]) for r in receipts],
            )
        )
    return answer
