"""Pairing codes: the merchant reserves one for a store and a partner, a terminal redeems it.

States (SPEC.md): reserved → consumed (row deleted, 404 after) or expired (row
kept until its number is drawn again, 410 meanwhile). Replacing a code deletes
the old row, so a replaced code answers 404 like a consumed one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.merchant.ownership import owned_store
from partnerlink.pairing.models import PairingCode
from partnerlink.partners.models import Partner
from partnerlink.partners.service import POS_TYPE_PATTERN
from partnerlink.problems import DomainError, Gone, NotFound, ValidationFailed
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from partnerlink.stores.service import (
    follow_partner,
    is_sandbox_partner_on_real_store,
    open_connection_with_access_token,
)

LOWEST_CODE = 100_000
HIGHEST_CODE = 999_999
# With 900,000 numbers and far fewer live codes, a second draw is already rare;
# running out of attempts means the code space is nearly full.
MAX_DRAWS = 32


class UnknownCode(NotFound):
    code = "unknown_code"
    detail = "No store is bound to this pairing code (unknown, already used or replaced)."


class CodeExpired(Gone):
    code = "code_expired"
    detail = "The pairing code's reservation has expired; reserve a new code."


class NoCodeFree(DomainError):
    status = 503
    code = "no_code_free"
    detail = "No free pairing code could be drawn; try again."


@dataclass(frozen=True)
class ReservedCode:
    code: int
    expires_at: datetime
    pos_type: str


@dataclass(frozen=True)
class PairedStore:
    access_token: str
    store_id: str
    pos_type: str | None


def reserve_pairing_code(
    session: Session, *, settings: Settings, merchant_id: str, store_id: str, pos_type: str
) -> ReservedCode:
    """Reserves a fresh code binding the merchant's store to the partner named by posType.

    A sandbox partner is no choice here (CONTRACT §12): its codes come only with a new
    test store (`reserve_test_store_code`), so a real store never turns into a test one.
    """
    store = owned_store(session, merchant_id=merchant_id, store_id=store_id)
    partner = _active_partner(session, pos_type)
    if partner.sandbox:
        raise ValidationFailed(
            "posType names a sandbox partner: its pairing codes come from "
            "POST /v1/sandbox/pairing-codes",
            code="invalid_field",
            errors=[{"field": "posType", "message": "names a sandbox partner"}],
        )
    return _reserve(session, settings=settings, store=store, partner=partner)


def reserve_test_store_code(
    session: Session, *, settings: Settings, store: Store, partner: Partner
) -> ReservedCode:
    """Reserves a code binding a sandbox partner to one of its own test stores."""
    if not (partner.sandbox and store.is_test):
        raise ValueError("a test store's code is for a sandbox partner and a test store")
    return _reserve(session, settings=settings, store=store, partner=partner)


def _reserve(
    session: Session, *, settings: Settings, store: Store, partner: Partner
) -> ReservedCode:
    replaced = set(
        session.scalars(
            delete(PairingCode)
            .where(PairingCode.store_id == store.id, PairingCode.partner_id == partner.id)
            .returning(PairingCode.code)
        )
    )
    now = utcnow()
    expires_at = now + timedelta(seconds=settings.pairing_code_ttl_seconds)
    for _ in range(MAX_DRAWS):
        code = LOWEST_CODE + secrets.randbelow(HIGHEST_CODE - LOWEST_CODE + 1)
        if code in replaced:  # the replaced code must stop working, even by chance
            continue
        # An expired row keeps its number only until the number is drawn again.
        session.execute(
            delete(PairingCode).where(PairingCode.code == code, PairingCode.expires_at <= now)
        )
        if _insert_unless_taken(
            session,
            code=code,
            store_id=store.id,
            partner_id=partner.id,
            reserved_at=now,
            expires_at=expires_at,
        ):
            follow_partner(session, store_id=store.id, pos_type=partner.pos_type)
            return ReservedCode(code=code, expires_at=expires_at, pos_type=partner.pos_type)
    raise NoCodeFree()


def redeem_pairing_code(session: Session, *, code: int) -> PairedStore:
    """Consumes the code once and opens a pairing connection with a durable access token."""
    if not LOWEST_CODE <= code <= HIGHEST_CODE:
        raise UnknownCode()
    row = session.execute(
        select(PairingCode.id, PairingCode.store_id, PairingCode.expires_at, Partner)
        .join(Partner, Partner.id == PairingCode.partner_id)
        .where(PairingCode.code == code)
    ).first()
    if row is None or not row.Partner.active:
        raise UnknownCode()
    # No foreign key holds the store on PostgreSQL (pairing_codes is a Citus reference
    # table, stores are distributed: migration 0025): a code whose store is gone binds nothing.
    if session.scalar(select(Store.id).where(Store.id == row.store_id)) is None:
        raise UnknownCode()
    if row.expires_at <= utcnow():
        raise CodeExpired()
    if is_sandbox_partner_on_real_store(session, store_id=row.store_id, partner_id=row.Partner.id):
        # A code a merchant reserved for a sandbox partner before such codes were refused
        # binds nothing: a real store never becomes a test store (CONTRACT §12).
        raise UnknownCode()
    # The delete is the claim: of concurrent redemptions exactly one removes the row.
    consumed = session.execute(
        delete(PairingCode)
        .where(PairingCode.id == row.id, PairingCode.expires_at > utcnow())
        .returning(PairingCode.id)
    ).scalar_one_or_none()
    if consumed is None:
        raise UnknownCode()
    partner: Partner = row.Partner
    opened = open_connection_with_access_token(
        session,
        store_id=row.store_id,
        partner_id=partner.id,
        pos_type=partner.pos_type,
        method="pairing",
        ttl_seconds=None,
    )
    session.flush()
    return PairedStore(
        access_token=opened.access_token, store_id=row.store_id, pos_type=partner.pos_type
    )


def _active_partner(session: Session, pos_type: str) -> Partner:
    partner = None
    if POS_TYPE_PATTERN.match(pos_type):
        partner = session.scalar(
            select(Partner).where(Partner.pos_type == pos_type, Partner.active.is_(True))
        )
    if partner is None:
        raise ValidationFailed(
            "posType names no registered partner",
            code="invalid_field",
            errors=[{"field": "posType", "message": "names no registered partner"}],
        )
    return partner


def _insert_unless_taken(session: Session, **values: Any) -> bool:
    """Inserts a code row; False when a live code already holds the number."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    inserted = session.execute(
        insert(PairingCode)
        .values(**values)
        .on_conflict_do_nothing(index_elements=[PairingCode.code])
        .returning(PairingCode.id)
    ).scalar_one_or_none()
    return inserted is not None
