"""The consent-screen flow: integration tokens, the merchant's consent, exchange and refresh.

State machine of an integration token (SPEC.md "States and transitions"):
pending → finished (merchant approves) → exchanged once; pending → cancelled
(merchant declines, or the lifetime passes: an expired pending token reads as
cancelled without any write). Every transition is one conditional UPDATE whose
rowcount decides, so two racing requests can never both win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, cast

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.connect.errors import (
    AlreadyExchanged,
    IntegrationTokenGone,
    InvalidGrantType,
    MissingField,
    NotFinished,
    OAuthConsentElsewhere,
    UnknownClient,
    UnknownIntegrationToken,
    UnknownRefreshToken,
)
from partnerlink.connect.models import IntegrationToken, OAuthAuthorization
from partnerlink.db.base import utcnow
from partnerlink.merchant.models import Profile
from partnerlink.merchant.ownership import owned_profile, owned_store
from partnerlink.partners.models import Partner
from partnerlink.partners.service import authenticate_partner, find_partner_by_client_id
from partnerlink.problems import InvalidCredentials, NotFound, ValidationFailed
from partnerlink.security.secrets import INTEGRATION_TOKEN_PREFIX, digest, mint
from partnerlink.stores.models import Store
from partnerlink.stores.service import (
    create_store,
    follow_partner,
    is_sandbox_partner_on_real_store,
    open_connection_with_access_token,
    set_green_invoices,
)
from partnerlink.tokens.service import (
    find_refreshable_connection,
    issue_access_token,
    issue_refresh_token,
)

__all__ = [  # the errors live in connect/errors.py; callers name them through this module too
    "AlreadyExchanged",
    "IntegrationTokenGone",
    "InvalidGrantType",
    "MissingField",
    "NotFinished",
    "OAuthConsentElsewhere",
    "UnknownClient",
    "UnknownIntegrationToken",
    "UnknownRefreshToken",
]

TokenStatus = Literal["pending", "finished", "cancelled"]
PENDING: TokenStatus = "pending"
FINISHED: TokenStatus = "finished"
CANCELLED: TokenStatus = "cancelled"


@dataclass(frozen=True)
class ConsentView:
    """What the consent screen shows about a pending integration."""

    partner_id: str
    partner_name: str
    pos_type: str
    ereceipt_offered: bool
    frame_origins: list[str]
    status: str
    sandbox: bool = False
    # Set when the consent serves an OAuth authorization request (connect/oauth_flow.py).
    oauth_redirect_uri: str | None = None


@dataclass(frozen=True)
class ExchangedTokens:
    access_token: str
    refresh_token: str
    expires_at: datetime
    ereceipt: bool
    store_id: str = ""
    connection_id: str = ""


def effective_status(token: IntegrationToken, now: datetime) -> TokenStatus:
    """The status a reader sees: a token past its lifetime reads as cancelled.

    SPEC.md: "an expired token counts as cancelled". That covers a finished token
    nobody exchanged in time too (an unredeemed grant should not live on, as with
    OAuth authorization codes); an exchanged one stays finished, so a second
    exchange still answers 410.
    """
    if token.exchanged_at is None and token.status != CANCELLED and token.expires_at <= now:
        return CANCELLED
    return cast(TokenStatus, token.status)


def _usable_text(value: str) -> bool:
    # PostgreSQL refuses NUL in text parameters; such a value can match nothing anyway.
    return "\x00" not in value


def authenticate_client(session: Session, *, client_id: str, client_secret: str) -> Partner:
    """Checks partner credentials; 403 `invalid_credentials` for any mismatch."""
    if not _usable_text(client_id):
        raise InvalidCredentials()
    return authenticate_partner(session, client_id, client_secret)


def _partner_for_consent(session: Session, client_id: str) -> Partner:
    partner = find_partner_by_client_id(session, client_id) if _usable_text(client_id) else None
    if partner is None or not partner.active:
        raise UnknownClient()
    return partner


def _find_token(session: Session, *, partner_id: str, value: str) -> IntegrationToken:
    """The partner's own token; another partner's answers exactly like an unknown one."""
    token = session.scalar(
        select(IntegrationToken).where(IntegrationToken.token_hash == digest(value))
    )
    if token is None or token.partner_id != partner_id:
        raise UnknownIntegrationToken()
    return token


def create_integration_token(session: Session, *, partner: Partner, ttl_seconds: int) -> str:
    """Mints a pending integration token; only its digest is stored."""
    value = mint(INTEGRATION_TOKEN_PREFIX, sandbox=partner.sandbox)
    now = utcnow()
    session.add(
        IntegrationToken(
            partner_id=partner.id,
            token_hash=digest(value),
            status=PENDING,
            created_at=now,
            expires_at=now + timedelta(seconds=ttl_seconds),
        )
    )
    session.flush()
    return value


def integration_status(
    session: Session, *, partner: Partner, integration_token: str
) -> TokenStatus:
    """Reads the effective status of the partner's integration token."""
    token = _find_token(session, partner_id=partner.id, value=integration_token)
    return effective_status(token, utcnow())


def exchange_integration_token(
    session: Session, *, partner: Partner, integration_token: str, access_ttl_seconds: int
) -> ExchangedTokens:
    """Exchanges a finished token, once, for access and refresh tokens of a new connection."""
    token = _find_token(session, partner_id=partner.id, value=integration_token)
    if is_oauth_integration(session, integration_token_id=token.id):
        # Its grant is the OAuth code, bound to PKCE: only POST /v1/oauth/token redeems it.
        raise UnknownIntegrationToken()
    return exchange_finished_token(
        session, partner=partner, token=token, access_ttl_seconds=access_ttl_seconds
    )


def is_oauth_integration(session: Session, *, integration_token_id: str) -> bool:
    found = session.scalar(
        select(OAuthAuthorization.id).where(
            OAuthAuthorization.integration_token_id == integration_token_id
        )
    )
    return found is not None


def exchange_finished_token(
    session: Session, *, partner: Partner, token: IntegrationToken, access_ttl_seconds: int
) -> ExchangedTokens:
    """The exchange itself, shared by SPEC's endpoint and the OAuth token endpoint."""
    now = utcnow()
    if effective_status(token, now) != FINISHED:
        raise NotFinished()
    if token.exchanged_at is not None:
        raise AlreadyExchanged()
    store = session.get(Store, token.store_id) if token.store_id else None
    if store is None:
        # CONTRACT.md §6 "missing target": the chosen store was deleted since approval.
        raise NotFinished("The store chosen on the consent screen no longer exists.")
    if is_sandbox_partner_on_real_store(session, store_id=store.id, partner_id=partner.id):
        # Approved before a sandbox partner was refused existing stores (CONTRACT §12).
        raise NotFinished("A sandbox partner connects only a new test store; connect again.")
    claimed = session.execute(
        update(IntegrationToken)
        .where(
            IntegrationToken.id == token.id,
            IntegrationToken.exchanged_at.is_(None),
            IntegrationToken.status == FINISHED,
            IntegrationToken.expires_at > now,
        )
        .values(exchanged_at=now)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        raise AlreadyExchanged()
    opened = open_connection_with_access_token(
        session,
        store_id=store.id,
        partner_id=partner.id,
        pos_type=partner.pos_type,
        method="consent",
        ttl_seconds=access_ttl_seconds,
    )
    refresh = issue_refresh_token(session, connection_id=opened.connection.id)
    session.flush()
    assert opened.expires_at is not None  # a ttl was given
    return ExchangedTokens(
        access_token=opened.access_token,
        refresh_token=refresh,
        expires_at=opened.expires_at,
        ereceipt=bool(partner.ereceipt and store.green_invoices),
        store_id=store.id,
        connection_id=opened.connection.id,
    )


def refresh_access_token(
    session: Session, *, partner: Partner, refresh_token: str, access_ttl_seconds: int
) -> tuple[str, datetime]:
    """Mints a new access token from a live refresh token; earlier access tokens stay valid."""
    connection = find_refreshable_connection(
        session, refresh_token=refresh_token, partner_id=partner.id
    )
    if connection is None:
        raise UnknownRefreshToken()
    access, expires_at = issue_access_token(
        session, connection_id=connection.id, ttl_seconds=access_ttl_seconds
    )
    session.flush()
    assert expires_at is not None  # a ttl was given
    return access, expires_at


def describe_consent(session: Session, *, integration_token: str, client_id: str) -> ConsentView:
    """Describes the integration a consent link asks the merchant to approve."""
    partner = _partner_for_consent(session, client_id)
    token = _find_token(session, partner_id=partner.id, value=integration_token)
    return ConsentView(
        partner_id=partner.id,
        partner_name=partner.name,
        pos_type=partner.pos_type,
        ereceipt_offered=bool(partner.ereceipt),
        frame_origins=list(partner.frame_origins or []),
        status=effective_status(token, utcnow()),
        sandbox=bool(partner.sandbox),
        oauth_redirect_uri=session.scalar(
            select(OAuthAuthorization.redirect_uri).where(
                OAuthAuthorization.integration_token_id == token.id
            )
        ),
    )


def _finish_pending(
    session: Session, *, token_id: str, merchant_id: str, green_invoices: bool
) -> None:
    """Claims a pending, unexpired token for the merchant; 410 for any other state."""
    now = utcnow()
    claimed = session.execute(
        update(IntegrationToken)
        .where(
            IntegrationToken.id == token_id,
            IntegrationToken.status == PENDING,
            IntegrationToken.expires_at > now,
        )
        .values(
            status=FINISHED, merchant_id=merchant_id, green_invoices=green_invoices, finished_at=now
        )
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        raise IntegrationTokenGone()


def _store_for_profile(session: Session, *, profile: Profile, partner: Partner) -> Store:
    """A new store under the profile, placed like the profile's other stores.

    Under a profile with no other store, country and currency stay unset until
    the partner's PUT /v1/stores (or an order's `store` snapshot) sends them.
    """
    sibling = session.scalar(
        select(Store).where(Store.profile_id == profile.id).order_by(Store.created_at).limit(1)
    )
    return create_store(
        session,
        profile_id=profile.id,
        name=f"{profile.name} – {partner.name}"[:300],
        country_code=sibling.country_code if sibling else None,
        currency=sibling.currency if sibling else None,
        manual=False,
        # Made as a test store: its texts are never sent and its data stays out of results.
        is_test=bool(partner.sandbox),
    )


def approve_consent(
    session: Session,
    *,
    integration_token: str,
    client_id: str,
    merchant_id: str,
    profile_id: str | None = None,
    store_id: str | None = None,
    green_invoices: bool = False,
    ends_oauth: bool = False,
) -> str:
    """Records the merchant's consent and chosen store; returns the store id.

    Everything that can refuse (ownership, state) is checked before the first
    write, so a caller that renders an error instead of re-raising commits nothing.
    A consent that serves an OAuth request is approved only by a caller that then ends
    that request (`ends_oauth`: the consent pages, which redirect back with a code):
    approved elsewhere, no code would ever be issued, and its store would be nobody's.
    """
    if (profile_id is None) == (store_id is None):
        raise ValidationFailed(
            "Choose exactly one: a profile or a store.",
            code="missing_field" if profile_id is None else "invalid_field",
            errors=[{"field": "profileId", "message": "give exactly one of profileId, storeId"}],
        )
    partner = _partner_for_consent(session, client_id)
    token = _find_token(session, partner_id=partner.id, value=integration_token)
    if effective_status(token, utcnow()) != PENDING:
        raise IntegrationTokenGone()
    if not ends_oauth and is_oauth_integration(session, integration_token_id=token.id):
        raise OAuthConsentElsewhere()
    chosen_id = profile_id if profile_id is not None else store_id
    if chosen_id is None or not _usable_text(chosen_id):
        raise NotFound("No such profile." if profile_id is not None else "No such store.")
    profile: Profile | None = None
    store: Store | None = None
    if profile_id is not None:
        profile = owned_profile(session, merchant_id=merchant_id, profile_id=chosen_id)
    else:
        if partner.sandbox:
            # CONTRACT §12: a store never turns from real to test, so a sandbox partner
            # gets a new test store in a profile, never an existing store.
            raise ValidationFailed(
                "A sandbox partner connects only a new test store; choose a profile instead.",
                errors=[
                    {"field": "storeId", "message": "a sandbox partner takes no existing store"}
                ],
            )
        store = owned_store(session, merchant_id=merchant_id, store_id=chosen_id)
        if not store.manual:
            # SPEC.md: "an existing manually added store"; a store a consent or pairing
            # created belongs to that integration (CONTRACT.md §6).
            raise ValidationFailed(
                "Only a manually added store can be chosen; choose a profile instead.",
                errors=[{"field": "storeId", "message": "must be a manually added store"}],
            )
    # The preference exists only when the partner offers e-receipts (CONTRACT.md §4).
    wants_receipts = bool(green_invoices and partner.ereceipt)
    _finish_pending(
        session, token_id=token.id, merchant_id=merchant_id, green_invoices=wants_receipts
    )
    if profile is not None:
        store = _store_for_profile(session, profile=profile, partner=partner)
    assert store is not None  # exactly one of profile and store was resolved above
    follow_partner(session, store_id=store.id, pos_type=partner.pos_type)
    if partner.ereceipt:
        set_green_invoices(session, store_id=store.id, enabled=wants_receipts)
    session.execute(
        update(IntegrationToken).where(IntegrationToken.id == token.id).values(store_id=store.id)
    )
    return store.id


def decline_consent(session: Session, *, integration_token: str, client_id: str) -> None:
    """Cancels a pending token; 410 when it is no longer pending."""
    partner = _partner_for_consent(session, client_id)
    token = _find_token(session, partner_id=partner.id, value=integration_token)
    now = utcnow()
    cancelled = session.execute(
        update(IntegrationToken)
        .where(
            IntegrationToken.id == token.id,
            IntegrationToken.status == PENDING,
            IntegrationToken.expires_at > now,
        )
        .values(status=CANCELLED)
    )
    if cancelled.rowcount != 1:  # type: ignore[attr-defined]
        raise IntegrationTokenGone()
