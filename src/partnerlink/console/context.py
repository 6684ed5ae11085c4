"""What the console's profile and store pages show, gathered from the domain services."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from partnerlink.customers.queries import count_customers
from partnerlink.merchant.connections import list_store_connections
from partnerlink.merchant.models import Profile
from partnerlink.merchant.ownership import owned_profile, owned_store
from partnerlink.merchant.profiles import profiles_view
from partnerlink.merchant.schemas import console_connection_json
from partnerlink.orders.schemas import recent_order_json
from partnerlink.orders.service import recent_orders
from partnerlink.partners.service import list_partners
from partnerlink.stores.schemas import merchant_store_view

RECENT_ORDERS_SHOWN = 20

CONVERSION_LABELS = {
    "new": "New customer from an ad",
    "returning": "Returning customer from an ad",
    "organic": "Organic",
    "anonymous": "Anonymous",
}
METHOD_LABELS = {"consent": "Consent screen", "pairing": "Pairing code"}


def profile_context(session: Session, *, merchant_id: str, profile_id: str) -> dict[str, Any]:
    """A profile with its stores and customer count; 404 for another merchant's."""
    profile = owned_profile(session, merchant_id=merchant_id, profile_id=profile_id)
    view = next(p for p in profiles_view(session, merchant_id=merchant_id) if p["id"] == profile.id)
    return {
        "profile": view,
        "customer_count": count_customers(session, profile_id=profile.id),
        "store_errors": {},
        "form": {},
    }


def store_context(session: Session, *, merchant_id: str, store_id: str) -> dict[str, Any]:
    """A store with its profile, connections, recent orders and the partners to pair with."""
    store = owned_store(session, merchant_id=merchant_id, store_id=store_id)
    profile = session.get(Profile, store.profile_id)
    connections = [
        console_connection_json(c)
        for c in list_store_connections(session, merchant_id=merchant_id, store_id=store.id)
    ]
    # Sandbox partners pair only their own test stores (CONTRACT §12), never a merchant's.
    partners = [p for p in list_partners(session) if p.active and not p.sandbox]
    live = [c for c in connections if not c.get("revokedAt")]
    names = {p.pos_type: p.name for p in partners}
    return {
        "partner_name": names.get(store.pos_type or ""),
        "store": merchant_store_view(store),
        "profile": profile,
        "connections": connections,
        "live_connections": live,
        "partners": partners,
        "orders": [
            recent_order_json(row)
            for row in recent_orders(session, store_id=store.id, limit=RECENT_ORDERS_SHOWN)
        ],
        "conversion_labels": CONVERSION_LABELS,
        "method_labels": METHOD_LABELS,
    }
