"""Buyers whose spend no 64-bit integer holds, and orders at the largest amount an order
may carry: what every sum over money must take exactly (CONTRACT §12, added 2026-11-29)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.orders.models import Order
from tests.audiences.helpers import add_customer, add_order
from tests.factories import ConnectedStoreFixture
from tests.orders.builders import order_body, post

CEILING = 999_999_999_999_999  # 10**15 - 1: the largest amount an order may carry
# Amounts of orders stored before amounts were bounded: ten of them pass 2**63 - 1. A
# refund of a remainder and one of a whole million cross SQLite's split of a sum.
BEYOND_BIGINT = [999_999_999_999_999_999] * 10
LARGER = [*BEYOND_BIGINT, -999_999]
SMALLER = [*BEYOND_BIGINT, -1_000_000]


@dataclass(frozen=True)
class BigSpenders:
    larger: Customer  # spends one minor unit more than `smaller`, which came first
    smaller: Customer
    small: list[Customer]  # three buyers of ordinary amounts
    orders: list[Order]  # the two big spenders' orders

    @property
    def larger_total(self) -> int:
        return sum(LARGER)


def big_spenders(session: Session, shop: ConnectedStoreFixture) -> BigSpenders:
    """Five buyers: `top` (a fifth of them) is `larger` alone, which no float or bigint
    tells from `smaller`, the older customer."""
    store = shop.store
    smaller = add_customer(session, store, email="smaller@example.com")
    larger = add_customer(session, store, email="larger@example.com", phone="+14155550100")
    orders = [add_order(session, store, smaller, days_ago=2, price=p) for p in SMALLER]
    orders += [add_order(session, store, larger, days_ago=2, price=p) for p in LARGER]
    small = []
    for number in range(3):
        buyer = add_customer(session, store, email=f"small{number}@example.com")
        add_order(session, store, buyer, days_ago=3, price=1000 + number)
        small.append(buyer)
    return BigSpenders(larger, smaller, small, orders)


def post_ceiling_orders(
    client: TestClient, shop: ConnectedStoreFixture, count: int = 12, email: str = "max@example.com"
) -> int:
    """`count` orders at the ceiling for one customer, through POST /v1/orders; their sum."""
    created = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for number in range(count):
        body = order_body(
            f"MAX-{number}",
            orderPrice=str(CEILING),
            createdAt=created,
            updatedAt=None,
            customerEmail=email,
        )
        answer = post(client, shop.auth, body)
        assert answer.status_code == 200, answer.text
    return count * CEILING
