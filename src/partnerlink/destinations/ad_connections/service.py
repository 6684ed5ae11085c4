"""Rules of ad connections (CONTRACT.md §14): a sign-in's start and finish, the
connections of a profile, and what a connection's change does to its destinations.
Services never commit: the request's session dependency does.

A token is sealed (security/sealing.py) under the purpose `ad-connection:{id}` and opened
only for a platform call; a destination made from a connection holds its own sealed copy
(what the sync engine reads), replaced on every reconnect.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import new_id, utcnow
from partnerlink.destinations.ad_connections.errors import NotConfigured, UnknownConnection
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.models import NEEDS_ATTENTION, PENDING, Destination
from partnerlink.destinations.schemas import DestinationRequest, invalid
from partnerlink.destinations.service import seal_credentials
from partnerlink.merchant.ownership import looks_like_id
from partnerlink.security.sealing import SealBroken, seal, unseal
from partnerlink.settings import Settings

NAMES = {"meta": "Meta", "google": "Google"}
WARN_BEFORE = timedelta(days=7)


def configured(settings: Settings, platform: str) -> bool:
    if platform == "meta":
        return bool(settings.meta_app_id and settings.meta_app_secret)
    if platform == "google":
        return bool(settings.google_client_id and settings.google_client_secret)
    return False


def require_configured(settings: Settings, platform: str) -> None:
    if not configured(settings, platform):
        raise NotConfigured()


def _purpose(connection_id: str) -> str:
    return f"ad-connection:{connection_id}"


def open_token(signing_key: bytes, connection: AdConnection) -> str | None:
    """The token in clear, for a platform call only; None when the service key changed."""
    try:
        value = unseal(signing_key, _purpose(connection.id), connection.token_sealed)
    except SealBroken:
        return None
    token = value.get("token")
    return token if isinstance(token, str) and token else None


def credentials_of(settings: Settings, connection: AdConnection, token: str) -> dict[str, str]:
    """§11's credentials of a destination that uses this connection."""
    if connection.platform == "meta":
        return {"accessToken": token}
    return {
        "clientId": settings.google_client_id or "",
        "clientSecret": settings.google_client_secret or "",
        "refreshToken": token,
    }


def save(
    session: Session,
    settings: Settings,
    *,
    profile_id: str,
    merchant_id: str,
    platform: str,
    token: str,
    expires_at: datetime | None,
    account_name: str | None,
    replacing: str | None,
) -> AdConnection:
    """A new connection, or (`replacing`, a reconnect) the same with the new token, which
    every destination that used it takes at once."""
    now = utcnow()
    connection = None
    if replacing is not None:
        connection = session.scalar(
            select(AdConnection).where(
                AdConnection.id == replacing, AdConnection.profile_id == profile_id
            )
        )
    if connection is None:
        connection = AdConnection(
            id=new_id(),
            profile_id=profile_id,
            merchant_id=merchant_id,
            platform=platform,
            created_at=now,
        )
        session.add(connection)
    connection.token_sealed = seal(settings.signing_key, _purpose(connection.id), {"token": token})
    connection.expires_at = expires_at
    connection.account_name = account_name or connection.account_name or NAMES[platform]
    connection.updated_at = now
    session.flush()
    for destination in _destinations_of(session, connection):
        credentials = credentials_of(settings, connection, token)
        destination.credentials_sealed = seal_credentials(
            settings.signing_key, destination.id, credentials
        )
        if destination.status == NEEDS_ATTENTION:
            destination.status = PENDING
            destination.last_error = None
        destination.attempts = 0
        destination.next_attempt_at = now
        destination.updated_at = now
    session.flush()
    return connection


def _destinations_of(session: Session, connection: AdConnection) -> list[Destination]:
    return list(
        session.scalars(
            select(Destination).where(
                Destination.ad_connection_id == connection.id,
                Destination.profile_id == connection.profile_id,
            )
        )
    )


def of_profile(session: Session, profile_id: str) -> list[AdConnection]:
    statement = (
        select(AdConnection)
        .where(AdConnection.profile_id == profile_id)
        .order_by(AdConnection.created_at, AdConnection.id)
    )
    return list(session.scalars(statement))


def find(session: Session, *, profile_id: str, connection_id: str) -> AdConnection:
    if not looks_like_id(connection_id):
        raise UnknownConnection()
    connection = session.scalar(
        select(AdConnection).where(
            AdConnection.id == connection_id, AdConnection.profile_id == profile_id
        )
    )
    if connection is None:
        raise UnknownConnection()
    return connection


def delete(session: Session, connection: AdConnection) -> None:
    """The token goes; its destinations stop (`needs_attention`, "Reconnect…") and keep
    no copy of it."""
    name = NAMES[connection.platform]
    session.execute(
        update(Destination)
        .where(
            Destination.ad_connection_id == connection.id,
            Destination.profile_id == connection.profile_id,
        )
        .values(
            status=NEEDS_ATTENTION,
            credentials_sealed="",
            ad_connection_id=None,
            last_error={
                "code": "credentials",
                "message": f"The {name} connection was removed. Reconnect with {name}, "
                "then pick this destination's account again.",
            },
            updated_at=utcnow(),
        )
    )
    session.delete(connection)
    session.flush()


def expiry_warning(connection: AdConnection | None, now: datetime | None = None) -> str | None:
    """From 7 days before a Meta token runs out: "Reconnect with Meta before {date}"."""
    if connection is None or connection.expires_at is None:
        return None
    if connection.expires_at - WARN_BEFORE > (now or utcnow()):
        return None
    return f"Reconnect with {NAMES[connection.platform]} before {connection.expires_at:%d %B %Y}"


def with_connection(
    session: Session, settings: Settings, profile_id: str, request: DestinationRequest
) -> DestinationRequest:
    """A destination request naming `connection`, with §11's credentials made from it."""
    if request.connection_id is None:
        return request
    connection = session.scalar(
        select(AdConnection).where(
            AdConnection.id == request.connection_id, AdConnection.profile_id == profile_id
        )
    )
    if connection is None or not looks_like_id(request.connection_id):
        raise invalid("connection", "is not an ad connection of this profile")
    if connection.platform != request.platform:
        raise invalid("connection", f"is a {NAMES[connection.platform]} connection")
    token = open_token(settings.signing_key, connection)
    if token is None:
        raise invalid("connection", "can no longer be read: disconnect and connect again")
    return replace(request, credentials=credentials_of(settings, connection, token))


def warnings_by_destination(
    session: Session, profile_id: str, warnings: dict[str, str | None]
) -> dict[str, str]:
    """Each destination of the profile whose connection runs out soon, and its warning."""
    rows = session.execute(
        select(Destination.id, Destination.ad_connection_id).where(
            Destination.profile_id == profile_id, Destination.ad_connection_id.is_not(None)
        )
    )
    return {d: text for d, c in rows if c and (text := warnings.get(c))}
