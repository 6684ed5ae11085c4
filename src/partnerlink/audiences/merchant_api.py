"""Merchant API of audiences (CONTRACT.md §8, §12): segments, exports, opt-out and its
lifting, erasure, and a person's data (data-subject access)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict

from partnerlink.audiences.access import export_person
from partnerlink.audiences.choices import MissingIdentifier, erase, opt_in, opt_out
from partnerlink.audiences.hashing import META_HEADER
from partnerlink.audiences.service import (
    Exclusion,
    ExportPlan,
    UnknownSegment,
    audiences,
    export_lines,
    plan_export,
)
from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.results import UnknownCampaign, campaign_of
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.ownership import owned_profile
from partnerlink.problems import NotFound, ValidationFailed, problem_responses
from partnerlink.security.identifier_digests import identifier_key

router = APIRouter(tags=["Merchant"])

PERSON_RESPONSES = problem_responses(MissingIdentifier, NotFound)


def digest_key(signing_key: bytes) -> bytes:
    """The key of the suppression list's digests (derived from the service key)."""
    return identifier_key(signing_key)


class PersonIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    email: str | None = None
    phoneNumber: str | None = None


@router.get("/profiles/{profileId}/audiences")
def get_audiences(
    profileId: str, merchant: CurrentMerchant, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    return {
        "audiences": audiences(
            session, profile_id=profile.id, digest_key=digest_key(settings.signing_key)
        )
    }


EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **problem_responses(ValidationFailed, UnknownSegment, UnknownCampaign),
    200: {
        "description": "The customer-list file: `meta` or `google` CSV, streamed",
        "content": {"text/csv": {"example": META_HEADER + "\n"}},
    },
}


@router.get("/profiles/{profileId}/audiences/{segment}/export", responses=EXPORT_RESPONSES)
def export_audience(
    profileId: str,
    segment: str,
    request: Request,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
    format: str = "",
    campaignId: str | None = None,
) -> StreamingResponse:
    """The segment as the ad platform's customer-list CSV, streamed."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    plan = plan_export(
        session,
        profile_id=profile.id,
        segment=segment,
        file_format=format,
        digest_key=digest_key(settings.signing_key),
    )
    if campaignId is None:
        return download(request, plan)
    campaign = campaign_of(session, profile_id=profile.id, campaign_id=campaignId)
    salt, percent = campaign.salt, campaign.holdout_percent
    # The campaign's control group never sees its ads (CONTRACT §7).
    return download(
        request, plan, exclude=lambda customer_id: is_control(salt, customer_id, percent)
    )


def download(
    request: Request, plan: ExportPlan, exclude: Exclusion | None = None
) -> StreamingResponse:
    """The export as a CSV attachment, streamed a chunk of customers at a time."""
    return StreamingResponse(
        export_lines(request.app.state.engine, plan, exclude=exclude),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{plan.filename}"'},
    )


@router.post("/profiles/{profileId}/customers/opt-out", responses=PERSON_RESPONSES)
def post_opt_out(
    profileId: str, body: PersonIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    """The merchant opts the matching customers out of every export."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    count = opt_out(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"optedOut": count}


@router.delete("/profiles/{profileId}/customers/opt-out", responses=PERSON_RESPONSES)
def delete_opt_out(
    profileId: str, body: PersonIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    """Lifts the merchant's own opt-out of the matching customers; `optedIn` counts the
    customers that had one. A customer's SMS STOP stays until the phone sends START."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    count = opt_in(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"optedIn": count}


@router.post("/profiles/{profileId}/customers/erase", responses=PERSON_RESPONSES)
def post_erase(
    profileId: str,
    body: PersonIn,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    count = erase(
        session,
        profile_id=profile.id,
        email=body.email,
        phone=body.phoneNumber,
        digest_key=digest_key(settings.signing_key),
    )
    return {"erased": count}


@router.get("/profiles/{profileId}/customers/export", responses=PERSON_RESPONSES)
def get_person_export(
    profileId: str,
    merchant: CurrentMerchant,
    session: SessionDep,
    email: str | None = None,
    phoneNumber: str | None = None,
) -> dict[str, Any]:
    """Everything the profile holds about one person (data-subject access): each matching
    customer with their orders as stored, their opt-out and the receipt texts sent."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    found = export_person(session, profile_id=profile.id, email=email, phone=phoneNumber)
    return {"customers": found}
