"""CONTRACT.md §9 for partners: revoke a connection, read a token's status, list connections."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.pages import Page, keyset_page
from partnerlink.partners.models import Partner
from partnerlink.security.secrets import digest
from partnerlink.tokens.models import Connection, Token
from partnerlink.tokens.service import ConnectedStore, revoke_connection


@dataclass(frozen=True)
class TokenStatus:
    store_id: str
    pos_type: str | None
    method: str
    expires_at: datetime | None


def revoke_by_token(session: Session, *, partner: Partner, token: str) -> None:
    """Revokes the whole connection of an access or refresh token of the partner's own.

    An unknown token, another partner's, or one whose connection is already revoked
    changes nothing and is not told apart (RFC 7009): the caller answers 200 either way.
    The revocation is the merchant's (tokens.service.revoke_connection): every token of
    the connection is refused from the commit on, on every process.
    """
    connection = session.execute(
        select(Connection)
        .join(Token, Token.connection_id == Connection.id)
        .where(Token.token_hash == digest(token), Connection.partner_id == partner.id)
    ).scalar_one_or_none()
    if connection is not None:
        revoke_connection(session, connection, reason="partner")


def token_status(session: Session, *, caller: ConnectedStore, token: str) -> TokenStatus:
    """What a live access token (already authenticated as `caller`) is for, and until when.

    Its `posType` is that of the partner the token was issued to (CONTRACT.md §12), not the
    store's: a store shared by two partners names the one connected last.
    """
    row = session.execute(
        select(Connection.method, Partner.pos_type, Token.expires_at)
        .join(Token, Token.connection_id == Connection.id)
        .join(Partner, Partner.id == Connection.partner_id)
        .where(Token.token_hash == digest(token), Connection.id == caller.connection_id)
    ).one()
    return TokenStatus(store_id=caller.store_id, pos_type=row[1], method=row[0], expires_at=row[2])


def live_connections(
    session: Session, *, partner: Partner, limit: int, cursor: str | None
) -> Page[Connection]:
    """A page of the partner's connections that are not revoked, oldest first.

    Keyed by (createdAt, id): a connection opened between two pages is newer than every
    one already shown, so it comes on a later page and none is shown twice or skipped.
    """
    return keyset_page(
        session,
        select(Connection).where(
            Connection.partner_id == partner.id, Connection.revoked_at.is_(None)
        ),
        key=(Connection.created_at, Connection.id),
        limit=limit,
        cursor=cursor,
    )
