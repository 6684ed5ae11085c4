"""Endpoints 6 and 7 of SPEC.md: the store profile and the store's settings."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from partnerlink.deps import SessionDep
from partnerlink.problems import InvalidToken, field_problem, problem_responses
from partnerlink.stores.schemas import (
    StoreEnvelope,
    StoreProfileIn,
    StoreSettingsOut,
    store_response,
    store_settings,
)
from partnerlink.stores.service import apply_store_profile, load_store
from partnerlink.tokens.deps import CurrentStore, LegacyAccessToken

router = APIRouter(tags=["Stores"])


@router.put(
    "/stores",
    response_model=StoreEnvelope,
    summary="Create or update the store profile",
    responses=problem_responses(
        field_problem("storeName", "required"),
        field_problem("storeCountryCode", "must be an ISO 3166-1 alpha-2 country code, e.g. US"),
        InvalidToken,
    ),
)
def put_store(
    profile: StoreProfileIn,
    current: CurrentStore,
    session: SessionDep,
    _legacy_token: LegacyAccessToken = None,
) -> dict[str, Any]:
    """Writes the connected store's profile and answers the stored store.

    Optional fields left out keep their stored values. Without `storeCurrency`
    the store keeps its currency, or takes the new country's when the country changes.
    """
    store = apply_store_profile(session, store_id=current.store_id, profile=profile)
    return store_response(store)


@router.get(
    "/stores",
    response_model=StoreSettingsOut,
    summary="Read the store's settings",
    responses=problem_responses(InvalidToken),
)
def get_store_settings(
    current: CurrentStore, session: SessionDep, _legacy_token: LegacyAccessToken = None
) -> dict[str, Any]:
    """Answers whether the merchant turned e-receipts on for this store."""
    return store_settings(load_store(session, store_id=current.store_id))
