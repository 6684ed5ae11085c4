"""Connections and their tokens: open, mint, look up, refresh, revoke."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.problems import InvalidToken
from partnerlink.security.secrets import (
    ACCESS_TOKEN_PREFIX,
    REFRESH_TOKEN_PREFIX,
    digest,
    mint,
)
from partnerlink.stores.models import Store
from partnerlink.stores.service import STORE_PROFILE_COLUMNS, remember_store
from partnerlink.tokens.models import Connection, Token


@dataclass(frozen=True)
class ConnectedStore:
    """Who is calling a data endpoint: the store behind the access token."""

    store_id: str
    profile_id: str
    partner_id: str
    connection_id: str
    # Read in the same query, for data endpoints that need them (orders: no second look-up).
    store_name: str = ""
    store_country_code: str = ""
    green_invoices: bool = False


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str | None
    expires_at: datetime | None
    connection_id: str


def open_connection(
    session: Session, *, store_id: str, partner_id: str, method: str, pos_type: str
) -> Connection:
    """Opens a connection, revoking any live one of the same store and partner.

    A store holds at most one live connection per partner (CONTRACT.md §6), and
    its posType follows the partner connected last.
    """
    now = utcnow()
    session.execute(
        update(Connection)
        .where(
            Connection.store_id == store_id,
            Connection.partner_id == partner_id,
            Connection.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    connection = Connection(store_id=store_id, partner_id=partner_id, method=method, created_at=now)
    session.add(connection)
    session.execute(update(Store).where(Store.id == store_id).values(pos_type=pos_type))
    session.flush()
    return connection


def issue_access_token(
    session: Session, *, connection_id: str, ttl_seconds: int | None
) -> tuple[str, datetime | None]:
    """Mints an access token; `ttl_seconds=None` means durable (pairing flow)."""
    value = mint(ACCESS_TOKEN_PREFIX)
    expires_at = utcnow() + timedelta(seconds=ttl_seconds) if ttl_seconds is not None else None
    session.add(
        Token(
            connection_id=connection_id,
            kind="access",
            token_hash=digest(value),
            expires_at=expires_at,
        )
    )
    return value, expires_at


def issue_refresh_token(session: Session, *, connection_id: str) -> str:
    value = mint(REFRESH_TOKEN_PREFIX)
    session.add(Token(connection_id=connection_id, kind="refresh", token_hash=digest(value)))
    return value


def _live_token(session: Session, value: str, kind: str) -> tuple[Token, Connection] | None:
    row = session.execute(
        select(Token, Connection)
        .join(Connection, Connection.id == Token.connection_id)
        .where(Token.token_hash == digest(value), Token.kind == kind)
    ).first()
    if row is None:
        return None
    token, connection = row
    if connection.revoked_at is not None:
        return None
    if token.expires_at is not None and token.expires_at <= utcnow():
        return None
    return token, connection


# One round-trip per data request: token, connection and store in one statement, with
# revocation and expiry checked by the database (the ORM version cost about as much
# as the order it authenticated). The store's whole profile comes along: an order's store
# snapshot is compared with it (stores.service.remember_store), so a batch of orders
# reads its store with its token.
_ACCESS_LOOKUP = Statement(
    "SELECT c.id, c.store_id, c.partner_id, s.profile_id, s.green_invoices, "
    + ", ".join(f"s.{column}" for column in STORE_PROFILE_COLUMNS)
    + " FROM tokens t JOIN connections c ON c.id = t.connection_id"
    " JOIN stores s ON s.id = c.store_id"
    " WHERE t.token_hash = :token_hash AND t.kind = 'access' AND c.revoked_at IS NULL"
    " AND (t.expires_at IS NULL OR t.expires_at > :now)"
)


def authenticate_access_token(session: Session, value: str) -> ConnectedStore:
    """Resolves a presented access token to its store, or raises InvalidToken (403)."""
    return authenticate_access_token_sql(Sql.of_session(session), value)


def authenticate_access_token_sql(sql: Sql, value: str) -> ConnectedStore:
    """`authenticate_access_token` on a driver connection (the orders hot path).

    The look-up is by SHA-256 digest, an exact index match on a value derived
    from a 256-bit secret, so it reveals nothing usable through timing. Within
    one transaction a token is looked up once (`Sql.remembered`): a batch of
    orders from one store pays for one look-up, and a revocation committed
    before the transaction began is still seen by every order in it.
    """
    if not value:
        raise InvalidToken()
    token_hash = digest(value)
    found: ConnectedStore | None = sql.remembered.get(("access token", token_hash))
    if found is not None:
        return found
    row = sql.row(_ACCESS_LOOKUP, {"token_hash": token_hash, "now": sql.time(utcnow())})
    if row is None:
        raise InvalidToken()
    store = dict(zip(STORE_PROFILE_COLUMNS, row[5:], strict=True))
    found = sql.remembered[("access token", token_hash)] = ConnectedStore(
        store_id=row[1],
        profile_id=row[3],
        partner_id=row[2],
        connection_id=row[0],
        store_name=store["name"],
        store_country_code=store["country_code"],
        green_invoices=bool(row[4]),
    )
    remember_store(sql, row[1], tuple(row[4:]))
    return found


def find_refreshable_connection(
    session: Session, *, refresh_token: str, partner_id: str
) -> Connection | None:
    """The live connection a refresh token belongs to, if it is the partner's own."""
    found = _live_token(session, refresh_token, "refresh")
    if found is None or found[1].partner_id != partner_id:
        return None
    return found[1]


def revoke_connection(session: Session, connection: Connection) -> None:
    """Revokes at once: every token of the connection is checked against revoked_at."""
    if connection.revoked_at is None:
        connection.revoked_at = utcnow()
        session.flush()
