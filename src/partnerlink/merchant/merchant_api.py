"""Merchant JSON API (CONTRACT.md §4): sessions, profiles, stores and connections.

Consents, pairing codes, orders and customers have their own routers in their domains.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.merchant.connections import list_store_connections, revoke_merchant_connection
from partnerlink.merchant.deps import CurrentMerchant, presented_session_token
from partnerlink.merchant.manual_stores import create_manual_store, set_green_invoices
from partnerlink.merchant.profiles import create_profile, profiles_view
from partnerlink.merchant.schemas import (
    ManualStoreIn,
    ProfileIn,
    SessionIn,
    StorePatchIn,
    connection_json,
    new_profile_json,
    session_json,
)
from partnerlink.merchant.sessions import end_session, sign_in
from partnerlink.problems import RateLimited, Unauthorized, problem_responses
from partnerlink.security.client_address import client_address
from partnerlink.stores.schemas import merchant_store_view

router = APIRouter(tags=["Merchant"])


@router.post(
    "/sessions",
    summary="Sign in",
    responses=problem_responses(Unauthorized, RateLimited),
)
def post_session(
    body: SessionIn, request: Request, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Signs in with email and password; answers a bearer session token."""
    started = sign_in(
        session,
        email=body.email,
        password=body.password,
        client_address=client_address(request, settings.trusted_proxy_set),
        settings=settings,
    )
    return session_json(started)


@router.delete("/sessions", status_code=204)
def delete_session(request: Request, session: SessionDep) -> Response:
    """Signs out; answers 204 even when the token was already gone."""
    token = presented_session_token(request)
    if token:
        end_session(session, token)
    return Response(status_code=204)


@router.get("/profiles")
def get_profiles(merchant: CurrentMerchant, session: SessionDep) -> dict[str, Any]:
    return {"profiles": profiles_view(session, merchant_id=merchant.id)}


@router.post("/profiles")
def post_profile(body: ProfileIn, merchant: CurrentMerchant, session: SessionDep) -> dict[str, Any]:
    profile = create_profile(session, merchant_id=merchant.id, name=body.name)
    return {"profile": new_profile_json(profile)}


@router.post("/profiles/{profileId}/stores")
def post_manual_store(
    profileId: str, body: ManualStoreIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    store = create_manual_store(
        session,
        merchant_id=merchant.id,
        profile_id=profileId,
        name=body.name,
        address=body.address,
        country_code=body.countryCode,
        currency=body.currency,
    )
    return {"store": merchant_store_view(store)}


@router.patch("/stores/{storeId}")
def patch_store(
    storeId: str, body: StorePatchIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    store = set_green_invoices(
        session, merchant_id=merchant.id, store_id=storeId, enabled=body.greenInvoices
    )
    return {"store": merchant_store_view(store)}


@router.get("/stores/{storeId}/connections")
def get_store_connections(
    storeId: str, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    connections = list_store_connections(session, merchant_id=merchant.id, store_id=storeId)
    return {"connections": [connection_json(c) for c in connections]}


@router.delete("/connections/{connectionId}", status_code=204)
def delete_connection(
    connectionId: str, merchant: CurrentMerchant, session: SessionDep
) -> Response:
    """Revokes the connection: every access and refresh token of it stops working at once."""
    revoke_merchant_connection(session, merchant_id=merchant.id, connection_id=connectionId)
    return Response(status_code=204)
