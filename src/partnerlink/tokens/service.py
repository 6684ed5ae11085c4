"""Connections and their tokens: open, mint, look up, refresh, revoke."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.partners.models import Partner
from partnerlink.problems import InvalidToken, ValidationFailed
from partnerlink.security.secrets import (
    ACCESS_TOKEN_PREFIX,
    REFRESH_TOKEN_PREFIX,
    digest,
    mint,
)
from partnerlink.tokens.models import Connection, Token
from partnerlink.webhooks.events import connection_revoked


class SandboxPartnerRealStore(ValidationFailed):
    code = "invalid_field"
    detail = (
        "A sandbox partner connects only test stores: get one with POST /v1/sandbox/pairing-codes."
    )


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
    # The further store columns a caller asked the look-up for (`access_lookup`), in order.
    store_columns: tuple[Any, ...] = ()


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str | None
    expires_at: datetime | None
    connection_id: str


def open_connection(
    session: Session,
    *,
    store_id: str,
    profile_id: str,
    partner_id: str,
    method: str,
    store_is_test: bool,
) -> Connection:
    """Opens a connection, revoking any live one of the same store and partner.

    A store holds at most one live connection per partner (CONTRACT.md §6). tokens sits
    below stores and touches no store row: the caller names the store's profile, says
    whether the store is a test store, and sets its posType
    (`stores.service.open_connection` does all three).
    """
    if is_sandbox_partner_on_real_store(
        session, partner_id=partner_id, store_is_test=store_is_test
    ):
        # CONTRACT §9/§12: a store never turns from real to test. Consent and pairing refuse
        # this earlier with their own answers; this is the last guard of every path.
        raise SandboxPartnerRealStore()
    now = utcnow()
    replaced = session.scalars(
        update(Connection)
        .where(
            Connection.store_id == store_id,
            Connection.partner_id == partner_id,
            Connection.revoked_at.is_(None),
        )
        .values(revoked_at=now)
        .returning(Connection.id)
        .execution_options(synchronize_session=False)
    ).all()
    for connection_id in replaced:
        connection_revoked(
            session,
            connection_id=connection_id,
            store_id=store_id,
            partner_id=partner_id,
            reason="replaced",
        )
    connection = Connection(
        store_id=store_id,
        profile_id=profile_id,
        partner_id=partner_id,
        method=method,
        created_at=now,
    )
    session.add(connection)
    session.flush()
    return connection


def is_sandbox_partner_on_real_store(
    session: Session, *, partner_id: str, store_is_test: bool
) -> bool:
    """Whether a sandbox partner would reach a real store (one not made as a test store)."""
    if store_is_test:
        return False
    return bool(session.scalar(select(Partner.sandbox).where(Partner.id == partner_id)))


def event_receivers(
    session: Session, *, store_id: str, connection_id: str | None = None
) -> list[tuple[str, str]]:
    """Who hears of a store's event (webhooks' `Receivers`): (connection id, partner id)
    of the store's live connections, or of the one live connection named."""
    statement = select(Connection.id, Connection.partner_id).where(Connection.revoked_at.is_(None))
    if connection_id is None:
        statement = statement.where(Connection.store_id == store_id)
    else:
        statement = statement.where(Connection.id == connection_id)
    return [(row[0], row[1]) for row in session.execute(statement)]


@dataclass(frozen=True)
class OpenedConnection:
    connection: Connection
    access_token: str
    expires_at: datetime | None


# A token's connection, joined on the distribution column too (partnerlink.db.distribution):
# under Citus, co-located shards join on their own node.
_OF_CONNECTION = and_(
    Connection.id == Token.connection_id, Connection.profile_id == Token.profile_id
)


def partner_of_live_token(session: Session, token_hash: str) -> tuple[str, datetime | None] | None:
    """The partner whose live access token this is (by digest), and when the token expires:
    what a request presenting it names, for its quota (tokens/quota.py). A revoked or
    expired token names nobody, like an unknown one: counted, it would let whoever still
    holds it spend the partner's quota and lock out the partner's every merchant."""
    row = session.execute(
        select(Connection.partner_id, Token.expires_at)
        .join(Token, _OF_CONNECTION)
        .where(
            Token.token_hash == token_hash,
            Token.kind == "access",
            Connection.revoked_at.is_(None),
            or_(Token.expires_at.is_(None), Token.expires_at > utcnow()),
        )
    ).first()
    return None if row is None else (row.partner_id, row.expires_at)


def issue_access_token(
    session: Session, *, connection_id: str, ttl_seconds: int | None
) -> tuple[str, datetime | None]:
    """Mints an access token; `ttl_seconds=None` means durable (pairing flow)."""
    expires_at = utcnow() + timedelta(seconds=ttl_seconds) if ttl_seconds is not None else None
    value = _issue(session, connection_id, "access", ACCESS_TOKEN_PREFIX, expires_at)
    return value, expires_at


def issue_refresh_token(session: Session, *, connection_id: str) -> str:
    return _issue(session, connection_id, "refresh", REFRESH_TOKEN_PREFIX, None)


def _issue(
    session: Session, connection_id: str, kind: str, prefix: str, expires_at: datetime | None
) -> str:
    """Mints a token of the connection; the row carries the connection's profile (the
    distribution column, migration 0025)."""
    row = session.execute(
        select(Partner.sandbox, Connection.profile_id)
        .join(Connection, Connection.partner_id == Partner.id)
        .where(Connection.id == connection_id)
    ).one()
    value = mint(prefix, sandbox=bool(row.sandbox))
    session.add(
        Token(
            connection_id=connection_id,
            profile_id=row.profile_id,
            kind=kind,
            token_hash=digest(value),
            expires_at=expires_at,
        )
    )
    return value


def _live_token(session: Session, value: str, kind: str) -> tuple[Token, Connection] | None:
    row = session.execute(
        select(Token, Connection)
        .join(Connection, _OF_CONNECTION)
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
# as the order it authenticated).
def access_lookup(store_columns: Sequence[str] = ()) -> Statement:
    """The access-token look-up; `store_columns` are read along (ConnectedStore.store_columns).

    The orders' hot path reads the store's whole profile with the token: an order's
    store snapshot is compared with it, so a batch of orders reads its store with its token.
    """
    return Statement(
        "SELECT c.id, c.store_id, c.partner_id, s.profile_id, s.green_invoices, s.name,"
        " s.country_code"
        + "".join(f", s.{name}" for name in store_columns)
        + f" FROM {ACCESS_JOINS} WHERE {live_access_token(':token_hash')}"
    )


# The tables behind an access token: its connection and the connection's store (`t`, `c`,
# `s`). Joined on profile_id too: co-located shards join on their node under Citus.
ACCESS_JOINS = (
    "tokens t JOIN connections c ON c.id = t.connection_id AND c.profile_id = t.profile_id"
    " JOIN stores s ON s.id = c.store_id AND s.profile_id = c.profile_id"
)


def live_access_token(token_hash: str) -> str:
    """The condition on ACCESS_JOINS that `token_hash` (SQL) is a live access token at
    `:now`: of its kind, not expired, its connection not revoked."""
    return (
        f"t.token_hash = {token_hash} AND t.kind = 'access' AND c.revoked_at IS NULL"
        " AND (t.expires_at IS NULL OR t.expires_at > :now)"
    )


_ACCESS_LOOKUP = access_lookup()


def connection_lookup(store_columns: Sequence[str] = ()) -> Statement:
    """`access_lookup`'s columns, found by the connection rather than by a token: for an
    order acknowledged under load (orders/intake/journal.py) and applied later. Its token was
    accepted when the order was; a revocation since does not undo an acknowledged order."""
    return Statement(
        "SELECT c.id, c.store_id, c.partner_id, s.profile_id, s.green_invoices, s.name,"
        " s.country_code"
        + "".join(f", s.{name}" for name in store_columns)
        + " FROM connections c JOIN stores s ON s.id = c.store_id AND s.profile_id = c.profile_id"
        " WHERE c.id = :connection_id"
    )


def connected_store_sql(sql: Sql, connection_id: str, lookup: Statement) -> ConnectedStore | None:
    """The store behind a connection, read with `connection_lookup`'s statement (None when
    the connection or its store is gone); looked up once per transaction."""
    key = ("connection", connection_id, lookup.sqlite)
    if key in sql.remembered:
        found: ConnectedStore | None = sql.remembered[key]
        return found
    row = sql.row(lookup, {"connection_id": connection_id})
    found = sql.remembered[key] = None if row is None else _connected_store(row)
    return found


def authenticate_access_token(session: Session, value: str) -> ConnectedStore:
    """Resolves a presented access token to its store, or raises InvalidToken (403)."""
    return authenticate_access_token_sql(Sql.of_session(session), value)


def authenticate_access_token_sql(
    sql: Sql, value: str, lookup: Statement = _ACCESS_LOOKUP
) -> ConnectedStore:
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
    key = ("access token", token_hash, lookup.sqlite)
    found: ConnectedStore | None = sql.remembered.get(key)
    if found is not None:
        return found
    row = sql.row(lookup, {"token_hash": token_hash, "now": sql.time(utcnow())})
    if row is None:
        raise InvalidToken()
    found = sql.remembered[key] = _connected_store(row)
    return found


def _connected_store(row: Any) -> ConnectedStore:
    """A row of `access_lookup` or `connection_lookup`."""
    return ConnectedStore(
        store_id=row[1],
        profile_id=row[3],
        partner_id=row[2],
        connection_id=row[0],
        store_name=row[5],
        store_country_code=row[6],
        green_invoices=bool(row[4]),
        store_columns=tuple(row[7:]),
    )


def find_refreshable_connection(
    session: Session, *, refresh_token: str, partner_id: str
) -> Connection | None:
    """The live connection a refresh token belongs to, if it is the partner's own."""
    found = _live_token(session, refresh_token, "refresh")
    if found is None or found[1].partner_id != partner_id:
        return None
    return found[1]


def revoke_connection(session: Session, connection: Connection, *, reason: str) -> None:
    """Revokes at once: every token of the connection is checked against revoked_at. The
    partner hears of it (`connection.revoked`, reason `merchant` or `partner`)."""
    if connection.revoked_at is None:
        connection.revoked_at = utcnow()
        connection_revoked(
            session,
            connection_id=connection.id,
            store_id=connection.store_id,
            partner_id=connection.partner_id,
            reason=reason,
        )
        session.flush()
