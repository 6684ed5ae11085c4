"""The merchant's side of the consent screen as JSON (CONTRACT.md §4), for the merchant app."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from partnerlink.connect import service
from partnerlink.connect.schemas import ApproveConsentIn, DeclineConsentIn
from partnerlink.deps import SessionDep
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.profiles import profiles_view
from partnerlink.problems import ValidationFailed, field_problem, problem_responses

router = APIRouter(tags=["Consent (merchant)"])


@router.get(
    "/consents/{integrationToken}",
    summary="Read a pending consent: the partner and the merchant's profiles",
    responses=problem_responses(
        field_problem("client_id", "required"),
        service.UnknownClient,
        service.UnknownIntegrationToken,
    ),
)
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


@router.post(
    "/consents/{integrationToken}/approve",
    summary="Approve a partner's consent (what the consent screen's confirm does)",
    responses=problem_responses(
        ValidationFailed(
            "Choose exactly one: a profile or a store.",
            code="missing_field",
            errors=[{"field": "profileId", "message": "give exactly one of profileId, storeId"}],
        ),
        service.OAuthConsentElsewhere(),
        service.UnknownClient,
        service.UnknownIntegrationToken,
        service.IntegrationTokenGone,
    ),
)
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


@router.post(
    "/consents/{integrationToken}/decline",
    summary="Decline a partner's consent",
    responses=problem_responses(
        service.UnknownClient, service.UnknownIntegrationToken, service.IntegrationTokenGone
    ),
)
def decline_consent(
    integrationToken: str, body: DeclineConsentIn, session: SessionDep, _merchant: CurrentMerchant
) -> dict[str, Any]:
    service.decline_consent(session, integration_token=integrationToken, client_id=body.clientId)
    return {"status": service.CANCELLED}
