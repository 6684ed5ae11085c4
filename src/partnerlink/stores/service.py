"""Store profiles: apply what a partner sends, and the views of a store."""

from __future__ import annotations

from typing import Any

from babel.numbers import get_territory_currencies
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.problems import InvalidToken
from partnerlink.stores.models import Store
from partnerlink.stores.schemas import StoreProfileIn
from partnerlink.tokens import service as tokens
from partnerlink.tokens.models import Connection

# A territory with no tender of its own (Antarctica) still needs a currency.
FALLBACK_CURRENCY = "USD"


def default_currency_for(country_code: str) -> str:
    """Returns the country's current legal tender (ISO 4217), e.g. JP -> JPY."""
    currencies = get_territory_currencies(country_code.upper(), tender=True)
    return currencies[0] if currencies else FALLBACK_CURRENCY


def load_store(session: Session, *, store_id: str) -> Store:
    """Loads the store behind an access token."""
    store = session.get(Store, store_id)
    if store is None:
        # The token's store was deleted between authentication and now.
        raise InvalidToken()
    return store


def is_test_store(session: Session, *, store_id: str) -> bool:
    return bool(session.scalar(select(Store.is_test).where(Store.id == store_id)))


def _test_and_profile(session: Session, *, store_id: str) -> tuple[bool, str]:
    row = session.execute(select(Store.is_test, Store.profile_id).where(Store.id == store_id)).one()
    return bool(row.is_test), row.profile_id


def is_sandbox_partner_on_real_store(session: Session, *, store_id: str, partner_id: str) -> bool:
    """Whether a sandbox partner would reach a real store (one not made as a test store)."""
    return tokens.is_sandbox_partner_on_real_store(
        session, partner_id=partner_id, store_is_test=is_test_store(session, store_id=store_id)
    )


def open_connection(
    session: Session, *, store_id: str, partner_id: str, method: str, pos_type: str
) -> Connection:
    """tokens' `open_connection` with the store's side of it: a store's posType follows
    the partner connected last (tokens sits below stores and writes no store row)."""
    store_is_test, profile_id = _test_and_profile(session, store_id=store_id)
    connection = tokens.open_connection(
        session,
        store_id=store_id,
        profile_id=profile_id,
        partner_id=partner_id,
        method=method,
        store_is_test=store_is_test,
    )
    follow_partner(session, store_id=store_id, pos_type=pos_type)
    return connection


def open_connection_with_access_token(
    session: Session,
    *,
    store_id: str,
    partner_id: str,
    pos_type: str,
    method: str,
    ttl_seconds: int | None,
) -> tokens.OpenedConnection:
    """`open_connection`, and the connection's first access token."""
    connection = open_connection(
        session, store_id=store_id, partner_id=partner_id, method=method, pos_type=pos_type
    )
    access_token, expires_at = tokens.issue_access_token(
        session, connection_id=connection.id, ttl_seconds=ttl_seconds
    )
    return tokens.OpenedConnection(connection, access_token, expires_at)


def follow_partner(session: Session, *, store_id: str, pos_type: str) -> None:
    """A store's POS follows the partner connected last: its `pos_type` becomes the
    partner's when a connection opens (`open_connection`), and already when the merchant
    binds the store to a partner (an approved consent, a reserved pairing code)."""
    session.execute(update(Store).where(Store.id == store_id).values(pos_type=pos_type))
    session.flush()


def create_store(
    session: Session,
    *,
    profile_id: str,
    name: str,
    country_code: str | None,
    currency: str | None,
    manual: bool,
    address: str = "",
    green_invoices: bool = False,
    is_test: bool = False,
) -> Store:
    """A new store under a profile: added by hand (`manual`), made by a consent, or a
    sandbox partner's test store (`is_test`, never flipped either way)."""
    store = Store(
        profile_id=profile_id,
        name=name,
        address=address,
        country_code=country_code,
        currency=currency,
        manual=manual,
        green_invoices=green_invoices,
        is_test=is_test,
    )
    session.add(store)
    session.flush()
    return store


def set_green_invoices(session: Session, *, store_id: str, enabled: bool) -> None:
    """Turns the store's e-receipt flag on or off (whoever tells partners of it calls this)."""
    session.execute(update(Store).where(Store.id == store_id).values(green_invoices=enabled))
    session.flush()


def profile_values(
    profile: StoreProfileIn, *, stored_currency: str | None
) -> dict[str, str | None]:
    """The store columns a partner's profile sets; None means "keep the stored value".

    Optional fields that are absent (or null) keep their stored value. An absent
    currency keeps the store's configured one, whatever the country (CONTRACT.md
    §6); only a store that has none yet takes its country's currency.
    """
    if profile.storeCurrency:
        currency: str | None = profile.storeCurrency
    elif stored_currency:
        currency = None  # kept
    else:
        currency = default_currency_for(profile.storeCountryCode)
    return {
        "name": profile.storeName,
        "address": profile.storeAddress,
        "country_code": profile.storeCountryCode,
        "currency": currency,
        "city": profile.storeCity,
        "state": profile.storeState,
        "postal_code": profile.storePostalCode,
        "phone_number": profile.storePhoneNumber,
    }


def apply_store_profile(session: Session, *, store_id: str, profile: StoreProfileIn) -> Store:
    """Writes a partner's store profile onto the store (PUT /v1/stores).

    The same write as an order's store snapshot (`apply_store_profile_sql`), on the
    session's own connection and transaction.
    """
    store = load_store(session, store_id=store_id)
    session.flush()
    apply_store_profile_sql(Sql.of_session(session), store_id=store_id, profile=profile)
    session.refresh(store)
    return store


# The columns a store snapshot (PUT /v1/stores, an order's `store`) writes.
STORE_PROFILE_COLUMNS = (
    "name",
    "address",
    "country_code",
    "currency",
    "city",
    "state",
    "postal_code",
    "phone_number",
)
_STORE_NOW = Statement(
    f"SELECT green_invoices, {', '.join(STORE_PROFILE_COLUMNS)} FROM stores WHERE id = :store_id"
)
_STORE_UPDATE = Statement(
    "UPDATE stores SET "
    + ", ".join(f"{column} = :{column}" for column in STORE_PROFILE_COLUMNS)
    + ", updated_at = :now WHERE id = :store_id"
)


def apply_store_profile_sql(
    sql: Sql, *, store_id: str, profile: StoreProfileIn
) -> tuple[str, str, bool]:
    """`apply_store_profile` on a driver connection (orders); answers (name, country, receipts on).

    Writes only when the profile changes something: partners resend the same
    snapshot with every order, and an UPDATE would lock the store's row until
    the commit, queueing every other order of the store behind it.
    """
    # Read once per transaction (`Sql.remembered`), with the access token when it was
    # authenticated in it (`remember_store`): a batch of orders that all carry the same
    # snapshot reads the store at most once and writes it at most once.
    remembered = _remembered_store(store_id)
    row = sql.remembered.get(remembered)
    if row is None:
        row = sql.row(_STORE_NOW, {"store_id": store_id})
        if row is None:
            raise InvalidToken()  # deleted between authentication and now
    stored = dict(zip(STORE_PROFILE_COLUMNS, row[1:], strict=True))
    values = profile_values(profile, stored_currency=stored["currency"])
    wanted = {
        column: stored[column] if value is None else value for column, value in values.items()
    }
    if wanted != stored:
        sql.run(_STORE_UPDATE, {**wanted, "store_id": store_id, "now": sql.time(utcnow())})
        sql.remembered.clear()  # store facts read earlier in this transaction are stale now
    sql.remembered[remembered] = (row[0], *(wanted[column] for column in STORE_PROFILE_COLUMNS))
    return profile.storeName, profile.storeCountryCode, bool(row[0])


def _remembered_store(store_id: str) -> tuple[str, str]:
    return ("store profile", store_id)


def remember_store(sql: Sql, store_id: str, row: tuple[Any, ...]) -> None:
    """Keeps the store's row as read in this transaction, (green_invoices, *STORE_PROFILE_COLUMNS),
    so that applying a snapshot later in it needs no read of its own."""
    sql.remembered.setdefault(_remembered_store(store_id), row)
