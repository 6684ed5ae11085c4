"""Merchant API of ad connections (CONTRACT.md §14): the console's connect-and-pick steps
for programs, under `/merchant/api/profiles/{profileId}/ad-connections`. No answer ever
holds a token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Body, Depends, Request, Response

from partnerlink.deps import SessionDep, SettingsDep
from partnerlink.destinations.ad_connections import lists, schemas, service, sign_in
from partnerlink.destinations.ad_connections.errors import (
    NotConfigured,
    PlatformRefused,
    PlatformUnavailable,
    UnknownConnection,
)
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.platform import platform_client
from partnerlink.merchant.deps import CurrentMerchant, OwnedProfile, presented_session_token
from partnerlink.problems import NotFound, ValidationFailed, problem_responses

router = APIRouter(tags=["Merchant ad platforms"])

RESPONSES = problem_responses(
    ValidationFailed, NotFound, NotConfigured, PlatformRefused, PlatformUnavailable
)
PREFIX = "/profiles/{profileId}/ad-connections"


def owned_connection(profile: OwnedProfile, connectionId: str, session: SessionDep) -> AdConnection:
    """The path's connection, of the signed-in merchant's own profile (else 404)."""
    return service.find(session, profile_id=profile.id, connection_id=connectionId)


OwnedConnection = Annotated[AdConnection, Depends(owned_connection)]


def http_client(settings: SettingsDep) -> Iterator[httpx.Client]:
    with platform_client(request_seconds=settings.ad_request_timeout_seconds) as client:
        yield client


HttpDep = Annotated[httpx.Client, Depends(http_client)]


@router.post(PREFIX + "/{platform}", status_code=201, responses=RESPONSES)
def post_ad_connection(
    platform: str,
    profile: OwnedProfile,
    merchant: CurrentMerchant,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    connection: str | None = None,
) -> dict[str, Any]:
    """Starts a sign-in with Meta or Google: open `authorizeUrl` in the merchant's browser;
    the platform sends it back to PartnerLink's callback, which saves the connection.
    `?connection=` (one of the profile's) reconnects it: the new token replaces the old
    one in every destination that used it."""
    if platform not in service.NAMES:
        raise UnknownConnection("No such ad platform: meta or google.")
    replacing = None
    if connection is not None:
        found = service.find(session, profile_id=profile.id, connection_id=connection)
        if found.platform != platform:
            raise UnknownConnection(f"No such {service.NAMES[platform]} connection.")
        replacing = found.id
    url = sign_in.start(
        session,
        settings,
        platform=platform,
        profile_id=profile.id,
        merchant_id=merchant.id,
        session_token=presented_session_token(request),
        via="api",
        connection_id=replacing,
    )
    return {"authorizeUrl": url}


@router.get(PREFIX, responses=RESPONSES)
def list_ad_connections(profile: OwnedProfile, session: SessionDep) -> dict[str, Any]:
    return {
        "connections": [schemas.connection_json(c) for c in service.of_profile(session, profile.id)]
    }


@router.delete(PREFIX + "/{connectionId}", status_code=204, responses=RESPONSES)
def delete_ad_connection(connection: OwnedConnection, session: SessionDep) -> Response:
    """The token is deleted; the connection's destinations stop (`needs_attention`)."""
    service.delete(session, connection)
    return Response(status_code=204)


@router.get(PREFIX + "/{connectionId}/accounts", responses=RESPONSES)
def get_accounts(
    connection: OwnedConnection, session: SessionDep, settings: SettingsDep, http: HttpDep
) -> dict[str, Any]:
    """Meta: the ad accounts the sign-in may use. Google: the customer ids its
    destinations name (Google has no list of them for this scope)."""
    return {"accounts": lists.accounts(session, settings, http, connection)}


@router.get(PREFIX + "/{connectionId}/audiences", responses=RESPONSES)
def get_audiences(
    connection: OwnedConnection, settings: SettingsDep, http: HttpDep, account: str = ""
) -> dict[str, Any]:
    """Meta: the account's customer-list audiences. Google: its Customer Match lists of
    contact information."""
    return {"audiences": lists.audiences(settings, http, connection, account)}


@router.get(PREFIX + "/{connectionId}/datasets", responses=RESPONSES)
def get_datasets(
    connection: OwnedConnection, settings: SettingsDep, http: HttpDep, account: str = ""
) -> dict[str, Any]:
    """Meta: the account's datasets (pixels), where sales are sent."""
    return {"datasets": lists.datasets(settings, http, connection, account)}


@router.post(PREFIX + "/{connectionId}/audiences", status_code=201, responses=RESPONSES)
def post_audience(
    connection: OwnedConnection,
    profile: OwnedProfile,
    settings: SettingsDep,
    http: HttpDep,
    body: Annotated[dict[str, Any], Body(examples=[{"account": "1234567890", "segment": "all"}])],
) -> dict[str, Any]:
    """Creates a customer-list audience (Meta) or Customer Match list (Google) named
    "{business} – {segment}"."""
    return {"audience": lists.create_audience(settings, http, connection, profile.name, body)}
