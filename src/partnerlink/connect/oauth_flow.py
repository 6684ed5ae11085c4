"""OAuth 2.0's rules over the consent flow (CONTRACT §13): requests, codes, token look-ups.

An authorization request becomes a pending integration token (SPEC's consent, so
the merchant signs in and chooses on the very same screens) plus a row that keeps
what OAuth adds. Approval mints a code: 256 random bits, stored as a digest, valid
`PARTNERLINK_OAUTH_CODE_TTL_SECONDS`, redeemed once by one conditional UPDATE. A
code presented again revokes the connection it opened (RFC 6749 §4.1.2).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.connect.errors import AlreadyExchanged, NotFinished
from partnerlink.connect.models import IntegrationToken, OAuthAuthorization
from partnerlink.connect.service import (
    ExchangedTokens,
    create_integration_token,
    exchange_finished_token,
)
from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.security.secrets import digest
from partnerlink.tokens.models import Connection, Token
from partnerlink.tokens.service import revoke_connection


class CodeRefused(Exception):
    """The code cannot be redeemed (unknown, expired, used, or its consent is gone)."""


@dataclass(frozen=True)
class AuthorizationRequest:
    """What the authorization endpoint validated, kept until the merchant decides."""

    redirect_uri: str
    state: str | None
    code_challenge: str
    redirect_uri_given: bool = True


def start_authorization(
    session: Session, *, partner: Partner, request: AuthorizationRequest, ttl_seconds: int
) -> str:
    """A pending consent for an OAuth authorization request; returns its integration token."""
    integration_token = create_integration_token(session, partner=partner, ttl_seconds=ttl_seconds)
    token_id = session.scalar(
        select(IntegrationToken.id).where(IntegrationToken.token_hash == digest(integration_token))
    )
    assert token_id is not None  # flushed by create_integration_token
    session.add(
        OAuthAuthorization(
            integration_token_id=token_id,
            redirect_uri=request.redirect_uri,
            redirect_uri_given=request.redirect_uri_given,
            state=request.state,
            code_challenge=request.code_challenge,
        )
    )
    session.flush()
    return integration_token


def authorization_of(
    session: Session, *, integration_token: str
) -> tuple[AuthorizationRequest, OAuthAuthorization] | None:
    """The OAuth request a consent serves (None for SPEC's own consents)."""
    row = session.scalar(
        select(OAuthAuthorization)
        .join(IntegrationToken, IntegrationToken.id == OAuthAuthorization.integration_token_id)
        .where(IntegrationToken.token_hash == digest(integration_token))
    )
    if row is None:
        return None
    asked = AuthorizationRequest(
        row.redirect_uri, row.state, row.code_challenge, row.redirect_uri_given
    )
    return asked, row


def new_code() -> str:
    """256 random bits: no amount of guessing within a code's minute finds one."""
    return secrets.token_urlsafe(32)


def save_code(
    session: Session, *, authorization: OAuthAuthorization, code: str, ttl_seconds: int
) -> None:
    """Keeps the approved request's code, as a digest, for `ttl_seconds`."""
    authorization.code_hash = digest(code)
    authorization.code_expires_at = utcnow() + timedelta(seconds=ttl_seconds)
    session.flush()


def find_code(session: Session, *, partner: Partner, code: str) -> OAuthAuthorization | None:
    """The partner's live code; a used one revokes what it issued, and is refused.

    Another partner's code, an unknown one and an expired one are all just absent.
    """
    if not code or "\x00" in code:
        return None
    row = session.scalar(
        select(OAuthAuthorization)
        .join(IntegrationToken, IntegrationToken.id == OAuthAuthorization.integration_token_id)
        .where(
            OAuthAuthorization.code_hash == digest(code),
            IntegrationToken.partner_id == partner.id,
        )
    )
    if row is None:
        return None
    if row.code_used_at is not None:
        # RFC 6749 §4.1.2: the code was presented before; whoever holds it now may
        # have stolen it, so the tokens it bought stop working.
        revoke_issued(session, authorization=row)
        return None
    if row.code_expires_at is None or row.code_expires_at <= utcnow():
        return None
    return row


def revoke_issued(session: Session, *, authorization: OAuthAuthorization) -> None:
    if authorization.connection_id is None:
        return
    connection = session.get(Connection, authorization.connection_id)
    if connection is not None:
        revoke_connection(session, connection, reason="partner")


def redeem_code(
    session: Session,
    *,
    partner: Partner,
    authorization: OAuthAuthorization,
    access_ttl_seconds: int,
) -> ExchangedTokens:
    """Marks the code used (once, whoever races) and exchanges its consent for tokens."""
    now = utcnow()
    claimed = session.execute(
        update(OAuthAuthorization)
        .where(
            OAuthAuthorization.id == authorization.id,
            OAuthAuthorization.code_used_at.is_(None),
            OAuthAuthorization.code_expires_at > now,
        )
        .values(code_used_at=now)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        raise CodeRefused()
    token = session.get(IntegrationToken, authorization.integration_token_id)
    if token is None:
        raise CodeRefused()
    try:
        issued = exchange_finished_token(
            session, partner=partner, token=token, access_ttl_seconds=access_ttl_seconds
        )
    except (NotFinished, AlreadyExchanged) as error:
        raise CodeRefused() from error
    session.execute(
        update(OAuthAuthorization)
        .where(OAuthAuthorization.id == authorization.id)
        .values(connection_id=issued.connection_id)
        .execution_options(synchronize_session=False)
    )
    return issued


@dataclass(frozen=True)
class IntrospectedToken:
    """An access or refresh token as RFC 7662 describes it."""

    kind: str  # access | refresh
    partner_id: str
    client_id: str
    store_id: str
    method: str
    created_at: datetime
    expires_at: datetime | None
    revoked: bool


def introspect(session: Session, *, value: str) -> IntrospectedToken | None:
    """Any token of ours, whoever's; the caller decides who may see it."""
    if not value or "\x00" in value:
        return None
    row = session.execute(
        select(Token, Connection, Partner.client_id)
        .join(Connection, Connection.id == Token.connection_id)
        .join(Partner, Partner.id == Connection.partner_id)
        .where(Token.token_hash == digest(value))
    ).first()
    if row is None:
        return None
    token, connection, client_id = row
    return IntrospectedToken(
        kind=token.kind,
        partner_id=connection.partner_id,
        client_id=client_id,
        store_id=connection.store_id,
        method=connection.method,
        created_at=token.created_at,
        expires_at=token.expires_at,
        revoked=connection.revoked_at is not None,
    )
