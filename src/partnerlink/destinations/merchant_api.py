"""Merchant API of ad platforms (CONTRACT.md §11): a profile's destinations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response
from pydantic import SkipValidation

from partnerlink.deps import PageDep, SessionDep, SettingsDep
from partnerlink.destinations import runs, service
from partnerlink.destinations.ad_connections import service as ad_connections
from partnerlink.destinations.models import Destination
from partnerlink.destinations.preview import preview
from partnerlink.destinations.request_shapes import DestinationChangeIn, DestinationRequestIn
from partnerlink.destinations.schemas import destination_json, destination_request, run_json
from partnerlink.merchant.deps import OwnedProfile
from partnerlink.problems import NotFound, ValidationFailed, problem_responses

router = APIRouter(tags=["Merchant ad platforms"])

RESPONSES = problem_responses(ValidationFailed, NotFound)
# The bodies reach the routes as sent (SkipValidation): destination_request and
# service.change check them field by field, naming every problem with `invalid_field`;
# the models only give the OpenAPI document their typed shape.
NewDestination = Annotated[SkipValidation[DestinationRequestIn], Body(title="DestinationRequest")]
DestinationChange = Annotated[SkipValidation[DestinationChangeIn], Body(title="DestinationChange")]


def owned_destination(
    profile: OwnedProfile, destinationId: str, session: SessionDep
) -> Destination:
    """The path's destination, of the signed-in merchant's own profile (else 404)."""
    return service.find(session, profile_id=profile.id, destination_id=destinationId)


OwnedDestination = Annotated[Destination, Depends(owned_destination)]


@router.post("/profiles/{profileId}/destinations", status_code=201, responses=RESPONSES)
def post_destination(
    profile: OwnedProfile, body: NewDestination, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """Connects the profile to a Meta or Google audience or conversions destination."""
    request = destination_request(body)
    destination = service.create(
        session,
        profile_id=profile.id,
        request=ad_connections.with_connection(session, settings, profile.id, request),
        signing_key=settings.signing_key,
        ad_connection_id=request.connection_id,
    )
    return {"destination": destination_json(destination)}


@router.get("/profiles/{profileId}/destinations", responses=RESPONSES)
def list_destinations(profile: OwnedProfile, session: SessionDep, page: PageDep) -> dict[str, Any]:
    """Oldest first, in pages of `limit`; `nextCursor` (null on the last page) is the next
    page's `cursor`."""
    found = service.page_of_profile(session, profile.id, limit=page.limit, cursor=page.cursor)
    return {
        "destinations": [destination_json(d) for d in found.items],
        "nextCursor": found.next_cursor,
    }


@router.get("/profiles/{profileId}/destinations/{destinationId}", responses=RESPONSES)
def get_destination(destination: OwnedDestination) -> dict[str, Any]:
    return {"destination": destination_json(destination)}


@router.patch("/profiles/{profileId}/destinations/{destinationId}", responses=RESPONSES)
def patch_destination(
    destination: OwnedDestination,
    body: DestinationChange,
    session: SessionDep,
    settings: SettingsDep,
) -> dict[str, Any]:
    """New credentials put a `needs_attention` destination back to `pending`."""
    service.change(session, destination, body, signing_key=settings.signing_key)
    return {"destination": destination_json(destination)}


@router.post(
    "/profiles/{profileId}/destinations/{destinationId}/sync",
    status_code=202,
    responses=RESPONSES,
)
def post_sync(destination: OwnedDestination, session: SessionDep) -> dict[str, Any]:
    """The worker syncs the destination within seconds."""
    service.request_sync(session, destination)
    return {"destination": destination_json(destination)}


@router.delete(
    "/profiles/{profileId}/destinations/{destinationId}", status_code=204, responses=RESPONSES
)
def delete_destination(destination: OwnedDestination, session: SessionDep) -> Response:
    """Syncing stops and the credentials are deleted."""
    service.disconnect(session, destination)
    return Response(status_code=204)


RunsLimit = Annotated[
    int,
    Query(
        ge=1,
        le=runs.MAX_LIMIT,
        description=f"Runs per page: 1 to {runs.MAX_LIMIT} (default {runs.DEFAULT_LIMIT}).",
    ),
]
RunsCursor = Annotated[
    str | None,
    Query(description="The previous page's `nextCursor`; absent for the first page."),
]


@router.get("/profiles/{profileId}/destinations/{destinationId}/runs", responses=RESPONSES)
def list_runs(
    destination: OwnedDestination,
    session: SessionDep,
    limit: RunsLimit = runs.DEFAULT_LIMIT,
    cursor: RunsCursor = None,
) -> dict[str, Any]:
    """Run history, newest first: each sync's start and end, `trigger` (schedule, request,
    retry), `outcome` (ok, nothing_to_do, retry, needs_attention), what it added, removed,
    sent and had refused, and its error; kept 90 days. `nextCursor` (null on the last
    page) is the next page's `cursor`."""
    found = runs.page_of_runs(session, destination, limit=limit, cursor=cursor or None)
    return {"runs": [run_json(run) for run in found.items], "nextCursor": found.next_cursor}


@router.get("/profiles/{profileId}/destinations/{destinationId}/preview", responses=RESPONSES)
def get_preview(
    destination: OwnedDestination, session: SessionDep, settings: SettingsDep
) -> dict[str, int]:
    """What the next sync would send: people to `add` and `remove` (audiences), sales as
    `events` (conversions); computed without sending or changing anything."""
    return preview(session, destination, signing_key=settings.signing_key).as_json()
