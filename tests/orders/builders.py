"""Order bodies and small helpers shared by the orders and receipts tests."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.orders.intake.pipeline import Pipeline
from partnerlink.orders.models import Order
from partnerlink.orders.service import OrderPost
from partnerlink.receipts.models import Receipt

PHONE = "+14155550123"


def order_body(order_id: str = "A-1001", **overrides: Any) -> dict[str, Any]:
    """A realistic closed order with a customer phone; `overrides` replace top-level keys."""
    body: dict[str, Any] = {
        "orderId": order_id,
        "orderPrice": "2400",
        "orderCurrency": "USD",
        "createdAt": "2024-05-01T12:30:00.000Z",
        "updatedAt": "2024-05-01T12:41:00.000Z",
        "customerFirstName": "Ada",
        "customerLastName": "Lovelace",
        "customerPhoneNumber": PHONE,
        "customerEmail": "ada@example.com",
        "orderDetails": {
            "orderStatus": "CLOSED",
            "orderType": "dine-in",
            "orderItems": [
                {
                    "itemId": "sku-1",
                    "itemName": "Flat white",
                    "itemPrice": "450",
                    "itemQuantity": 2,
                    "itemTax": "72",
                },
                {
                    "itemId": "sku-2",
                    "itemName": "Croissant",
                    "itemPrice": "1500",
                    "itemQuantity": 1,
                    "itemTax": "120",
                },
            ],
            "orderPayments": [
                {
                    "paymentType": "card",
                    "paymentId": "p-1",
                    "paymentSum": "2400",
                    "paymentCardType": "VISA",
                    "paymentLast4": "4242",
                }
            ],
        },
    }
    body.update(copy.deepcopy(overrides))
    return body


def with_status(body: dict[str, Any], status: str) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    changed["orderDetails"]["orderStatus"] = status
    return changed


def post(client: TestClient, auth: dict[str, str], body: Any) -> Any:
    # json.dumps escapes lone surrogates (\\ud800) the way a partner's JSON library would.
    return client.post(
        "/v1/orders",
        content=json.dumps(body),
        headers={**auth, "content-type": "application/json"},
    )


def count_orders(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Order)) or 0
    session.rollback()  # release SQLite's one connection for the app
    return count


def _detached(session: Session, rows: list[Any]) -> list[Any]:
    # Detach, then end the read: the app needs SQLite's one connection back.
    session.expunge_all()
    session.rollback()
    return rows


def receipts(session: Session) -> list[Receipt]:
    return _detached(session, list(session.scalars(select(Receipt).order_by(Receipt.id))))


def orders(session: Session) -> list[Order]:
    return _detached(session, list(session.scalars(select(Order).order_by(Order.id))))


def stored_order(session: Session, order_id: str = "A-1001") -> Order:
    found = [o for o in orders(session) if o.order_id == order_id]
    assert len(found) == 1, found
    return found[0]


def run_posts(
    app: FastAPI, handler: Callable[..., Any], posts: Sequence[OrderPost]
) -> list[object]:
    """Submits the posts at once to a one-slot pipeline with `handler`, so that they are
    handled as one batch, in one transaction; each post's answer or exception."""

    async def main() -> list[object]:
        pipeline = Pipeline(app.state.engine, slots=1, handler=handler)
        return await asyncio.gather(*(pipeline.run(p) for p in posts), return_exceptions=True)

    return asyncio.run(main())
