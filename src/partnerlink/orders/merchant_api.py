"""The merchant API's order listing (CONTRACT.md §4): orders with their conversion class."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from partnerlink.deps import SessionDep
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.ownership import owned_store
from partnerlink.orders.schemas import recent_order_json
from partnerlink.orders.service import recent_orders

router = APIRouter(tags=["Merchant orders"])

MAX_LIMIT = 500


@router.get("/stores/{store_id}/orders")
def list_store_orders(
    store_id: str,
    merchant: CurrentMerchant,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
) -> dict[str, Any]:
    """The store's orders, newest first; another merchant's store answers 404."""
    owned_store(session, merchant_id=merchant.id, store_id=store_id)
    rows = recent_orders(session, store_id=store_id, limit=limit)
    return {"orders": [recent_order_json(row) for row in rows]}
