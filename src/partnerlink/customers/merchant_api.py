"""Merchant API (CONTRACT.md §4): a profile's customer base."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from partnerlink.customers.queries import count_customers, list_customers
from partnerlink.customers.schemas import customer_json
from partnerlink.deps import SessionDep
from partnerlink.merchant.deps import OwnedProfile

router = APIRouter(tags=["Merchant"])

DEFAULT_LIMIT = 50
# Larger limits are cut to this: one page of a million-customer base must stay cheap.
MAX_LIMIT = 1000


@router.get("/profiles/{profileId}/customers")
def get_profile_customers(
    profile: OwnedProfile,
    session: SessionDep,
    limit: Annotated[int, Query(ge=0)] = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """The profile's customers, newest first, and how many it has; another merchant's is 404."""
    customers = list_customers(session, profile_id=profile.id, limit=min(limit, MAX_LIMIT))
    return {
        "total": count_customers(session, profile_id=profile.id),
        "customers": [customer_json(customer) for customer in customers],
    }
