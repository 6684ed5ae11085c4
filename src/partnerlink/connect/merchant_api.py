"""The merchant's side of the consent screen as JSON (CONTRACT.md §4), for the merchant app."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from partnerlink.connect import service
from partnerlink.connect.schemas import ApproveConsentIn, DeclineConsentIn
from partnerlink.deps import SessionDep
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.profiles import profiles_view

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
        "profiles": profiles_view(session, merchant_id=merchant.id),
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
