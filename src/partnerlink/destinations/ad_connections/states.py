"""The `state` of a sign-in under way (CONTRACT §14): issued to one merchant session for
one profile, single use, at most 10 minutes old. Only its digest is stored; Google's PKCE
verifier is sealed beside it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import new_id, utcnow
from partnerlink.destinations.ad_connections.models import AdConnectionState
from partnerlink.kit.digests import sha256_hex
from partnerlink.security.sealing import SealBroken, seal, unseal

MAX_AGE = timedelta(minutes=10)


class StateRefused(Exception):
    """Why a callback's state is not taken: `unknown`, `used`, `expired`, `session`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Issued:
    state: str
    verifier: str | None


def _purpose(state_id: str) -> str:
    return f"ad-connection-state:{state_id}"


def issue(
    session: Session,
    signing_key: bytes,
    *,
    profile_id: str,
    merchant_id: str,
    session_token: str,
    via: str,
    platform: str,
    verifier: str | None = None,
    segment: str | None = None,
    connection_id: str | None = None,
) -> Issued:
    state = secrets.token_urlsafe(32)
    state_id = new_id()
    session.add(
        AdConnectionState(
            id=state_id,
            state_digest=sha256_hex(state),
            profile_id=profile_id,
            merchant_id=merchant_id,
            session_digest=sha256_hex(session_token),
            via=via,
            platform=platform,
            connection_id=connection_id,
            segment=segment,
            verifier_sealed=seal(signing_key, _purpose(state_id), {"v": verifier})
            if verifier
            else None,
            created_at=utcnow(),
        )
    )
    session.flush()
    return Issued(state, verifier)


def consume(
    session: Session,
    *,
    state: str,
    platform: str,
    session_token: str | None,
    session_merchant_id: str | None,
) -> AdConnectionState:
    """The state's record, marked used (one statement: two callbacks cannot both take it).

    A state issued to the console is taken only with the same session cookie; one issued
    to the API (whose authorize URL the program opens in a browser) with no session or
    one of the same merchant.
    """
    if not state or len(state) > 200:
        raise StateRefused("unknown")
    record = session.scalar(
        select(AdConnectionState).where(AdConnectionState.state_digest == sha256_hex(state))
    )
    if record is None or record.platform != platform:
        raise StateRefused("unknown")
    if record.used_at is not None:
        raise StateRefused("used")
    if record.via == "console":
        if not session_token or sha256_hex(session_token) != record.session_digest:
            raise StateRefused("session")
    elif session_merchant_id is not None and session_merchant_id != record.merchant_id:
        raise StateRefused("session")
    taken = session.execute(
        update(AdConnectionState)
        .where(AdConnectionState.id == record.id, AdConnectionState.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if taken.rowcount != 1:  # type: ignore[attr-defined]
        raise StateRefused("used")
    if record.created_at < utcnow() - MAX_AGE:
        raise StateRefused("expired")
    return record


def verifier_of(signing_key: bytes, record: AdConnectionState) -> str | None:
    if record.verifier_sealed is None:
        return None
    try:
        value = unseal(signing_key, _purpose(record.id), record.verifier_sealed)
    except SealBroken:
        return None
    verifier = value.get("v")
    return verifier if isinstance(verifier, str) else None
