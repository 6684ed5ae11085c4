"""Merchant API of audiences (CONTRACT.md §8, §12): segments, exports, opt-out and its
lifting, erasure, and a person's data (data-subject access)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from partnerlink.audiences.access import export_person
from partnerlink.audiences.choices import MissingIdentifier, erase, opt_in, opt_out
from partnerlink.audiences.hashing import META_HEADER
from partnerlink.audiences.schemas import PersonIn, download, person_json
from partnerlink.audiences.service import UnknownSegment, digest_key, plan_export
from partnerlink.audiences.stored_sizes import listed
from partnerlink.deps import ReadSessionDep, SessionDep, SettingsDep
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.results import UnknownCampaign, campaign_of
from partnerlink.merchant.deps import OwnedProfile
from partnerlink.problems import NotFound, ValidationFailed, problem_responses

router = APIRouter(tags=["Merchant"])

PERSON_RESPONSES = problem_responses(MissingIdentifier, NotFound)


@router.get("/profiles/{profileId}/audiences")
def get_audiences(
    profile: OwnedProfile, session: SessionDep, reads: ReadSessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Every segment's size, counted from `reads` (the replica when there is one); a large
    profile answers its stored count while fresh (docs/audiences.md). `computedAt` says
    when the sizes were counted."""
    found = listed(session, reads, profile_id=profile.id, settings=settings)
    return {"audiences": found.audiences, "computedAt": found.computed_at.isoformat()}


EXPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **problem_responses(ValidationFailed, UnknownSegment, UnknownCampaign),
    200: {
        "description": "The customer-list file: `meta` or `google` CSV, streamed",
        "content": {"text/csv": {"example": META_HEADER + "\n"}},
    },
}


@router.get("/profiles/{profileId}/audiences/{segment}/export", responses=EXPORT_RESPONSES)
def export_audience(
    profile: OwnedProfile,
    segment: str,
    request: Request,
    session: SessionDep,
    reads: ReadSessionDep,
    settings: SettingsDep,
    format: str = "",
    campaignId: str | None = None,
) -> StreamingResponse:
    """The segment as the ad platform's customer-list CSV, streamed (from the read replica
    when there is one: `download` streams from `app.state.read_engine`)."""
    plan = plan_export(
        reads,
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


@router.post("/profiles/{profileId}/customers/opt-out", responses=PERSON_RESPONSES)
def post_opt_out(profile: OwnedProfile, body: PersonIn, session: SessionDep) -> dict[str, Any]:
    """The merchant opts the matching customers out of every export."""
    count = opt_out(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"optedOut": count}


@router.delete("/profiles/{profileId}/customers/opt-out", responses=PERSON_RESPONSES)
def delete_opt_out(profile: OwnedProfile, body: PersonIn, session: SessionDep) -> dict[str, Any]:
    """Lifts the merchant's own opt-out of the matching customers; `optedIn` counts the
    customers that had one. A customer's SMS STOP stays until the phone sends START."""
    count = opt_in(session, profile_id=profile.id, email=body.email, phone=body.phoneNumber)
    return {"optedIn": count}


@router.post("/profiles/{profileId}/customers/erase", responses=PERSON_RESPONSES)
def post_erase(
    profile: OwnedProfile,
    body: PersonIn,
    session: SessionDep,
    settings: SettingsDep,
) -> dict[str, Any]:
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
    profile: OwnedProfile,
    session: SessionDep,
    email: str | None = None,
    phoneNumber: str | None = None,
) -> dict[str, Any]:
    """Everything the profile holds about one person (data-subject access): each matching
    customer with their orders as stored, their opt-out and the receipt texts sent."""
    found = export_person(session, profile_id=profile.id, email=email, phone=phoneNumber)
    return {"customers": [person_json(one) for one in found]}
