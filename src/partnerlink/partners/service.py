"""The partner registry: register, list, authenticate, rotate secrets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner, PartnerQuota
from partnerlink.problems import Conflict, InvalidCredentials, NotFound, ValidationFailed
from partnerlink.security.secrets import (
    CLIENT_ID_PREFIX,
    CLIENT_SECRET_PREFIX,
    digest,
    matches,
    mint,
)

POS_TYPE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
# A host name (optionally under a `*.` wildcard, as CSP allows), or an IPv6 literal.
_ORIGIN_HOST = re.compile(
    r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\]"
)
# Compared against when the client id is unknown, so both failures cost the same.
_UNKNOWN_CLIENT_DIGEST = digest("no-such-client")


@dataclass(frozen=True)
class RegisteredPartner:
    partner: Partner
    client_secret: str  # shown once, never stored


def register_partner(
    session: Session,
    *,
    name: str,
    pos_type: str,
    ereceipt: bool = False,
    frame_origins: list[str] | None = None,
    sandbox: bool = False,
    redirect_uris: list[str] | None = None,
) -> RegisteredPartner:
    """Registers an approved partner and mints its credentials."""
    if not name.strip():
        raise ValidationFailed("name is required", code="missing_field")
    if not POS_TYPE_PATTERN.match(pos_type):
        raise ValidationFailed(
            "posType must be lower-case letters, digits, '-' or '_'", code="invalid_field"
        )
    origins = [frame_origin(origin) for origin in frame_origins or []]
    redirects = checked_redirect_uris(redirect_uris or [])
    if session.scalar(select(Partner.id).where(Partner.pos_type == pos_type)):
        raise Conflict(f"posType {pos_type!r} already names a partner", code="pos_type_taken")
    secret = mint(CLIENT_SECRET_PREFIX, sandbox=sandbox)
    partner = Partner(
        name=name.strip(),
        pos_type=pos_type,
        sandbox=sandbox,
        client_id=mint(CLIENT_ID_PREFIX, 12, sandbox=sandbox),
        client_secret_hash=digest(secret),
        ereceipt=ereceipt,
        frame_origins=origins,
        redirect_uris=redirects,
    )
    session.add(partner)
    session.flush()
    return RegisteredPartner(partner=partner, client_secret=secret)


def frame_origin(raw: str) -> str:
    """An origin allowed to frame the consent screen, as `scheme://host[:port]`.

    Anything else is refused rather than dropped: the consent screen's CSP could not
    name it, and the partner's IFrame would stay blank with no hint why.
    """
    text = raw.strip()
    refused = ValidationFailed(
        f"frame origin {raw!r} is not an origin: give the scheme, host and optional port "
        "of the partner's page, e.g. https://pos.example.com",
        code="invalid_field",
        errors=[
            {"field": "frameOrigin", "message": "must be an origin, e.g. https://pos.example.com"}
        ],
    )
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise refused from None
    host = (parts.hostname or "").lower()
    if (
        parts.scheme.lower() not in ("http", "https")
        or not _ORIGIN_HOST.fullmatch(host if ":" not in host else f"[{host}]")
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or any(c in text for c in " ;,'\"\r\n\t")
    ):
        raise refused
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


MAX_REDIRECT_URI_LENGTH = 2000


def checked_redirect_uris(raw: list[str]) -> list[str]:
    """OAuth redirect URIs as registered: absolute http(s) URLs without a fragment.

    RFC 6749 §3.1.2: the endpoint URI must be absolute and must not include a
    fragment. The authorization endpoint then compares exact strings (§3.1.2.3),
    so a value is kept as given (trimmed), never normalised.
    """
    uris: list[str] = []
    for value in raw:
        text = value.strip()
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            parts = None
        if (
            parts is None
            or parts.scheme.lower() not in ("http", "https")
            or not parts.hostname
            or parts.fragment
            or "#" in text
            or len(text) > MAX_REDIRECT_URI_LENGTH
            or any(c in text for c in " \r\n\t\x00")
        ):
            raise ValidationFailed(
                f"redirect URI {value!r} is not an absolute http or https URL without a fragment",
                code="invalid_field",
                errors=[
                    {
                        "field": "redirectUri",
                        "message": "must be an absolute URL, e.g. https://pos.example.com/callback",
                    }
                ],
            )
        if text not in uris:
            uris.append(text)
    return uris


def set_redirect_uris(session: Session, client_id: str, redirect_uris: list[str]) -> Partner:
    """Replaces the partner's registered OAuth redirect URIs."""
    uris = checked_redirect_uris(redirect_uris)
    partner = find_partner_by_client_id(session, client_id)
    if partner is None:
        raise NotFound(f"no partner with client id {client_id}", code="unknown_client")
    partner.redirect_uris = uris
    session.flush()
    return partner


def authenticate_partner(session: Session, client_id: str, client_secret: str) -> Partner:
    """Checks client credentials in constant time; unknown id and wrong secret look alike."""
    partner = session.scalar(select(Partner).where(Partner.client_id == client_id))
    secret_ok = matches(
        client_secret, partner.client_secret_hash if partner else _UNKNOWN_CLIENT_DIGEST
    )
    if partner is None or not secret_ok or not partner.active:
        raise InvalidCredentials()
    return partner


def find_partner_by_client_id(session: Session, client_id: str) -> Partner | None:
    return session.scalar(select(Partner).where(Partner.client_id == client_id))


def list_partners(session: Session) -> list[Partner]:
    return list(session.scalars(select(Partner).order_by(Partner.created_at)))


def rotate_client_secret(session: Session, client_id: str) -> str:
    """Mints a new secret; the old one stops working at once."""
    partner = find_partner_by_client_id(session, client_id)
    if partner is None:
        raise NotFound(f"no partner with client id {client_id}", code="unknown_client")
    secret = mint(CLIENT_SECRET_PREFIX, sandbox=partner.sandbox)
    set_client_secret(session, partner=partner, client_secret=secret)
    return secret


def set_client_secret(session: Session, *, partner: Partner, client_secret: str) -> None:
    """Keeps the secret's digest; the one before stops working at once."""
    partner.client_secret_hash = digest(client_secret)
    session.flush()


def set_webhook_url(session: Session, *, partner: Partner, url: str) -> None:
    """Where the partner's webhook events go, as webhooks/registration.py checked it."""
    partner.webhook_url = url
    session.flush()


def set_webhook_secret(
    session: Session, *, partner: Partner, nonce: str, previous_until: datetime | None
) -> None:
    """The nonce the partner's webhook signing secret is derived from (webhooks/signing.py);
    with `previous_until`, the nonce it replaces keeps signing beside it until then
    (webhooks/registration.py holds the rotation's rules)."""
    if previous_until is not None:
        partner.webhook_previous_secret_nonce = partner.webhook_secret_nonce
        partner.webhook_previous_secret_until = previous_until
    partner.webhook_secret_nonce = nonce
    session.flush()


@dataclass(frozen=True, slots=True)
class ClientKey:
    """What tells whether client credentials name a partner: its id and secret digest."""

    partner_id: str
    client_secret_hash: str
    active: bool


def client_key(session: Session, client_id: str) -> ClientKey | None:
    row = session.execute(
        select(Partner.id, Partner.client_secret_hash, Partner.active).where(
            Partner.client_id == client_id
        )
    ).one_or_none()
    return None if row is None else ClientKey(row[0], row[1], bool(row[2]))


def requests_per_minute(session: Session, partner_id: str) -> int | None:
    """The partner's own quota (CONTRACT §13); None: the setting's applies."""
    return session.scalar(
        select(PartnerQuota.requests_per_minute).where(PartnerQuota.partner_id == partner_id)
    )


def set_requests_per_minute(session: Session, partner: Partner, quota: int) -> None:
    """Sets the partner's own requests-per-minute quota (at least 1)."""
    if quota < 1:
        raise ValidationFailed(
            "requests per minute: at least 1",
            errors=[{"field": "requestsPerMinute", "message": "at least 1"}],
        )
    row = session.get(PartnerQuota, partner.id)
    if row is None:
        session.add(PartnerQuota(partner_id=partner.id, requests_per_minute=quota))
    else:
        row.requests_per_minute = quota
    session.flush()
