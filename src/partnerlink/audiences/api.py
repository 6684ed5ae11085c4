"""Merchant API of audiences (CONTRACT.md §8): segments, exports, opt-out, erasure."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict

from partnerlink.audiences.hashing import META_HEADER
from partnerlink.audiences.service import (
    Exclusion,
    ExportPlan,
    MissingIdentifier,
    UnknownSegment,
    audiences,
    erase,
    export_lines,
    opt_out,
    plan_export,
)
from partnerlink.deps import SessionDep
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.results import UnknownCampaign, campaign_of
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.ownership import owned_profile
from partnerlink.problems import ValidationFailed, problem_responses

router = APIRouter(tags=["Merchant"])


class PersonIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    email: str | None = None
    phoneNumber: str | None = None


@router.get("/profiles/{profileId}/audiences")
def get_audiences(profileId: str, merchant: CurrentMerchant, session: SessionDep) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    return {"audiences": audiences(session, profile_id=profile.id)}


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
    format: str = "",
    campaignId: str | None = None,
) -> StreamingResponse:
    """The segment as the ad platform's customer-list CSV, streamed."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    plan = plan_export(session, profile_id=profile.id, segment=segment, file_format=format)
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


@router.post(
    "/profiles/{profileId}/customers/opt-out", responses=problem_responses(MissingIdentifier)
)
def post_opt_out(
    profileId: str, body: PersonIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    count = opt_out(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"optedOut": count}


@router.post(
    "/profiles/{profileId}/customers/erase", responses=problem_responses(MissingIdentifier)
)
def post_erase(
    profileId: str, body: PersonIn, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    count = erase(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"erased": count}
