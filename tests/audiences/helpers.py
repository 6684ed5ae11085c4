"""Arranging customers and orders for the audience tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.orders.models import Order
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection


def add_customer(
    session: Session,
    store: Store,
    *,
    email: str | None = None,
    phone: str | None = None,
    first_name: str | None = None,
    last_name: str | None = None,
    city: str | None = None,
    country_code: str | None = "US",
    postal_code: str | None = None,
) -> Customer:
    customer = Customer(
        profile_id=store.profile_id,
        email=email,
        phone_number=phone,
        first_name=first_name,
        last_name=last_name,
        city=city,
        country_code=country_code,
        postal_code=postal_code,
    )
    session.add(customer)
    session.commit()
    return customer


def add_order(
    session: Session,
    store: Store,
    customer: Customer | None,
    *,
    days_ago: float,
    price: int = 1000,
    currency: str = "USD",
    partner_id: str | None = None,
    status: str | None = None,
) -> Order:
    number = session.query(Order).count() + 1
    # Sent by the partner connected to the store last, as a POST /v1/orders would be.
    partner_id = partner_id or session.scalar(
        select(Connection.partner_id)
        .where(Connection.store_id == store.id)
        .order_by(Connection.created_at.desc())
        .limit(1)
    )
    assert partner_id is not None, "an order needs its partner: connect one or pass partner_id"
    order = Order(
        store_id=store.id,
        profile_id=store.profile_id,
        partner_id=partner_id,
        order_id=f"T-{number}",
        order_price=price,
        order_currency=currency,
        order_status=status,
        ordered_at=datetime.now(UTC) - timedelta(days=days_ago),
        customer_id=customer.id if customer else None,
        customer_first_name=customer.first_name if customer else None,
        customer_last_name=customer.last_name if customer else None,
        customer_email=customer.email if customer else None,
        customer_phone_number=customer.phone_number if customer else None,
        details={},
        conversion="organic",
    )
    session.add(order)
    session.commit()
    return order


def audience_sizes(
    client: TestClient, profile_id: str, owner: dict[str, str]
) -> dict[str, tuple[int, int, int]]:
    """GET .../audiences: each segment's (customers, withEmail, withPhone)."""
    response = client.get(f"/merchant/api/profiles/{profile_id}/audiences", headers=owner)
    assert response.status_code == 200, response.text
    return {
        a["segment"]: (a["customers"], a["withEmail"], a["withPhone"])
        for a in response.json()["audiences"]
    }
