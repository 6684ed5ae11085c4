"""Merchant API of ad platforms (CONTRACT.md §11): a profile's destinations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from partnerlink.deps import PageDep, SessionDep, SettingsDep
from partnerlink.destinations import service
from partnerlink.destinations.schemas import destination_json, destination_request
from partnerlink.merchant.deps import CurrentMerchant
from partnerlink.merchant.ownership import owned_profile
from partnerlink.problems import NotFound, ValidationFailed, problem_responses

router = APIRouter(tags=["Merchant ad platforms"])

RESPONSES = problem_responses(ValidationFailed, NotFound)
JsonBody = Annotated[Any, Body()]


@router.post("/profiles/{profileId}/destinations", status_code=201, responses=RESPONSES)
def post_destination(
    profileId: str,
    body: JsonBody,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Connects the profile to a Meta or Google audience or conversions destination."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    destination = service.create(
        session,
        profile_id=profile.id,
        request=destination_request(body),
        signing_key=settings.signing_key,
    )
    return {"destination": destination_json(destination)}


@router.get("/profiles/{profileId}/destinations", responses=RESPONSES)
def list_destinations(
    profileId: str, merchant: CurrentMerchant, session: SessionDep, page: PageDep
) -> dict[str, Any]:
    """Oldest first, in pages of `limit`; `nextCursor` (null on the last page) is the next
    page's `cursor`."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    found = service.page_of_profile(session, profile.id, limit=page.limit, cursor=page.cursor)
    return {
        "destinations": [destination_json(d) for d in found.items],
        "nextCursor": found.next_cursor,
    }


@router.get("/profiles/{profileId}/destinations/{destinationId}", responses=RESPONSES)
def get_destination(
    profileId: str, destinationId: str, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    destination = service.find(session, profile_id=profile.id, destination_id=destinationId)
    return {"destination": destination_json(destination)}


@router.patch("/profiles/{profileId}/destinations/{destinationId}", responses=RESPONSES)
def patch_destination(
    profileId: str,
    destinationId: str,
    body: JsonBody,
    merchant: CurrentMerchant,
    session: SessionDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    """New credentials put a `needs_attention` destination back to `pending`."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    destination = service.find(session, profile_id=profile.id, destination_id=destinationId)
    service.change(session, destination, body, signing_key=settings.signing_key)
    return {"destination": destination_json(destination)}


@router.post(
    "/profiles/{profileId}/destinations/{destinationId}/sync",
    status_code=202,
    responses=RESPONSES,
)
def post_sync(
    profileId: str, destinationId: str, merchant: CurrentMerchant, session: SessionDep
) -> dict[str, Any]:
    """The worker syncs the destination within seconds."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    destination = service.find(session, profile_id=profile.id, destination_id=destinationId)
    service.request_sync(session, destination)
    return {"destination": destination_json(destination)}


@router.delete(
    "/profiles/{profileId}/destinations/{destinationId}", status_code=204, responses=RESPONSES
)
def delete_destination(
    profileId: str, destinationId: str, merchant: CurrentMerchant, session: SessionDep
) -> Response:
    """Syncing stops and the credentials are deleted."""
    profile = owned_profile(session, merchant_id=merchant.id, profile_id=profileId)
    destination = service.find(session, profile_id=profile.id, destination_id=destinationId)
    service.disconnect(session, destination)
    return Response(status_code=204)
