"""Rules of destinations (CONTRACT.md §11): connecting, changing, syncing on request,
disconnecting. Services never commit: the request's session dependency does.

Credentials are sealed (security/sealing.py) before they reach the row, and opened
only by the sync engine that sends them to their platform.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import new_id, utcnow
from partnerlink.db.pages import Page, keyset_page
from partnerlink.destinations.models import ACTIVE, NEEDS_ATTENTION, PENDING, Destination
from partnerlink.destinations.schemas import (
    DestinationRequest,
    campaign_id_of,
    credentials_of,
    invalid,
    segment_of,
)
from partnerlink.measurement.results import UnknownCampaign, campaign_of
from partnerlink.merchant.ownership import looks_like_id
from partnerlink.problems import NotFound
from partnerlink.security.sealing import SealBroken, seal, unseal

__all__ = ["ACTIVE", "NEEDS_ATTENTION", "PENDING"]


class UnknownDestination(NotFound):
    code = "not_found"
    detail = "No such destination in this profile."


def _purpose(destination_id: str) -> str:
    return f"destination-credentials:{destination_id}"


def seal_credentials(signing_key: bytes, destination_id: str, credentials: dict[str, str]) -> str:
    return seal(signing_key, _purpose(destination_id), credentials)


def open_credentials(signing_key: bytes, destination: Destination) -> dict[str, str] | None:
    """The credentials in clear, for the platform call only; None when the service key
    changed since they were sealed (the merchant must give them again)."""
    try:
        value = unseal(signing_key, _purpose(destination.id), destination.credentials_sealed)
    except SealBroken:
        return None
    return {str(k): str(v) for k, v in value.items()}


def _check_campaign(session: Session, profile_id: str, campaign_id: str | None) -> None:
    if campaign_id is None:
        return
    try:
        campaign_of(session, profile_id=profile_id, campaign_id=campaign_id)
    except UnknownCampaign as error:
        raise invalid("campaignId", "is not a campaign of this profile") from error


def create(
    session: Session,
    *,
    profile_id: str,
    request: DestinationRequest,
    signing_key: bytes,
    ad_connection_id: str | None = None,
) -> Destination:
    _check_campaign(session, profile_id, request.campaign_id)
    destination_id = new_id()
    now = utcnow()
    destination = Destination(
        id=destination_id,
        profile_id=profile_id,
        platform=request.platform,
        kind=request.kind,
        segment=request.segment,
        campaign_id=request.campaign_id,
        target=request.target,
        consent=request.consent,
        credentials_sealed=seal_credentials(signing_key, destination_id, request.credentials),
        ad_connection_id=ad_connection_id,
        status=PENDING,
        members=0,
        sent_added=0,
        sent_removed=0,
        sent_events=0,
        sent_rejected=0,
        attempts=0,
        sync_requested=False,
        next_attempt_at=now,  # the worker's first sync: at its next look
        created_at=now,
        updated_at=now,
    )
    session.add(destination)
    session.flush()
    return destination


def of_profile(session: Session, profile_id: str) -> list[Destination]:
    statement = (
        select(Destination)
        .where(Destination.profile_id == profile_id)
        .order_by(Destination.created_at, Destination.id)
    )
    return list(session.scalars(statement))


def page_of_profile(
    session: Session, profile_id: str, *, limit: int, cursor: str | None
) -> Page[Destination]:
    """Oldest first (created, then id): a destination made between two pages comes last."""
    return keyset_page(
        session,
        select(Destination).where(Destination.profile_id == profile_id),
        key=[Destination.created_at, Destination.id],
        limit=limit,
        cursor=cursor,
    )


def find(session: Session, *, profile_id: str, destination_id: str) -> Destination:
    if not looks_like_id(destination_id):
        raise UnknownDestination()
    destination = session.scalar(
        select(Destination).where(
            Destination.id == destination_id, Destination.profile_id == profile_id
        )
    )
    if destination is None:
        raise UnknownDestination()
    return destination


def change(
    session: Session, destination: Destination, body: Any, *, signing_key: bytes
) -> Destination:
    """PATCH: new credentials, segment or campaign; all checked before any is applied."""
    if not isinstance(body, dict):
        raise invalid("body", "must be a JSON object")
    audience = destination.kind == "audience"
    credentials = segment = None
    if "credentials" in body:
        credentials = credentials_of(destination.platform, body["credentials"])
    for field in ("segment", "campaignId"):
        if field in body and not audience:
            raise invalid(field, "is for audience destinations only")
    if "segment" in body:
        segment = segment_of(body["segment"])
    campaign_id = destination.campaign_id
    if "campaignId" in body:
        campaign_id = campaign_id_of(body["campaignId"])
        _check_campaign(session, destination.profile_id, campaign_id)
    destination.campaign_id = campaign_id
    if segment is not None:
        destination.segment = segment
    if credentials is not None:
        destination.credentials_sealed = seal_credentials(signing_key, destination.id, credentials)
        if destination.status == NEEDS_ATTENTION:
            destination.status = PENDING
            destination.last_error = None
        destination.attempts = 0
        destination.next_attempt_at = utcnow()
    if segment is not None or "campaignId" in body:
        destination.next_attempt_at = utcnow()
    destination.updated_at = utcnow()
    session.flush()
    return destination


def request_sync(session: Session, destination: Destination) -> Destination:
    """The worker syncs it within seconds, even one waiting for new credentials."""
    destination.sync_requested = True
    destination.next_attempt_at = utcnow()
    destination.updated_at = utcnow()
    session.flush()
    return destination


def disconnect(session: Session, destination: Destination) -> None:
    """Syncing stops; the row goes, and its sealed credentials and records with it."""
    session.delete(destination)
    session.flush()


def every_destination(session: Session) -> list[Destination]:
    """Every profile's destinations (the operator's list)."""
    statement = select(Destination).order_by(Destination.profile_id, Destination.created_at)
    return list(session.scalars(statement))


def by_id(session: Session, destination_id: str) -> Destination:
    if not looks_like_id(destination_id):
        raise UnknownDestination()
    destination = session.get(Destination, destination_id)
    if destination is None:
        raise UnknownDestination()
    return destination
