"""The merchant's side of the consent screen as JSON (CONTRACT.md §4), for the merchant app."""

from __future__ import annotations

import importlib
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.connect.schemas import ApproveConsentIn, DeclineConsentIn
from partnerlink.deps import SessionDep
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.models import Profile
from partnerlink.stores.models import Store

router = APIRouter(tags=["Consent (merchant)"])


@router.get("/consents/{integrationToken}")
def read_consent(
    integrationToken: str,
    client_id: Annotated[str, Query(min_length=1)],
    session: SessionDep,
    merchant: CurrentMerchant,
) -> dict[str, Any]:
    view = service.describe_consent(
        session, integration_token=integrationToken, client_id=client_id
    )
    return {
        "partner": {
            "name": view.partner_name,
            "posType": view.pos_type,
            "ereceiptOffered": view.ereceipt_offered,
        },
        "status": view.status,
        "profiles": _profiles_view(session, merchant_id=merchant.id),
    }


@router.post("/consents/{integrationToken}/approve")
def approve_consent(
    integrationToken: str, body: ApproveConsentIn, session: SessionDep, merchant: CurrentMerchant
) -> dict[str, Any]:
    store_id = service.approve_consent(
        session,
        integration_token=integrationToken,
        client_id=body.clientId,
        merchant_id=merchant.id,
        profile_id=body.profileId,
        store_id=body.storeId,
        green_invoices=body.greenInvoices,
    )
    return {"status": service.FINISHED, "storeId": store_id}


@router.post("/consents/{integrationToken}/decline")
def decline_consent(
    integrationToken: str, body: DeclineConsentIn, session: SessionDep, _merchant: CurrentMerchant
) -> dict[str, Any]:
    service.decline_consent(session, integration_token=integrationToken, client_id=body.clientId)
    return {"status": service.CANCELLED}


def _shared(module: str, name: str) -> Any:
    """A function another domain provides, or None while it is still being written."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _profiles_view(session: Session, *, merchant_id: str) -> list[dict[str, Any]]:
    """The merchant domain's profile listing (CONTRACT.md §4), shared with GET /profiles."""
    shared = _shared("partnerlink.merchant.service", "profiles_view")
    if shared is not None:
        profiles: list[dict[str, Any]] = shared(session, merchant_id=merchant_id)
        return profiles
    return _fallback_profiles_view(session, merchant_id=merchant_id)


def _fallback_profiles_view(session: Session, *, merchant_id: str) -> list[dict[str, Any]]:
    # Used only until merchant.service.profiles_view exists.
    profiles = session.scalars(
        select(Profile).where(Profile.merchant_id == merchant_id).order_by(Profile.created_at)
    ).all()
    stores = session.scalars(
        select(Store)
        .where(Store.profile_id.in_([p.id for p in profiles]))
        .order_by(Store.created_at)
    ).all()
    return [
        {
            "id": profile.id,
            "name": profile.name,
            "stores": [_store_view(s) for s in stores if s.profile_id == profile.id],
        }
        for profile in profiles
    ]


def _store_view(store: Store) -> dict[str, Any]:
    shared = _shared("partnerlink.stores.service", "merchant_store_view")
    if shared is not None:
        view: dict[str, Any] = shared(store)
        return view
    return {
        "id": store.id,
        "name": store.name,
        "address": store.address,
        "city": store.city,
        "countryCode": store.country_code,
        "currency": store.currency,
        "posType": store.pos_type,
        "greenInvoices": store.green_invoices,
        "manual": store.manual,
    }
