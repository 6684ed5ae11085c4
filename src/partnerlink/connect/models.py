"""Integration tokens of the consent-screen flow."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, IdColumn, UTCDateTime, utcnow


class IntegrationToken(Base):
    __tablename__ = "integration_tokens"

    id: Mapped[str] = IdColumn()
    partner_id: Mapped[str] = mapped_column(
        ForeignKey("partners.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # pending | finished | cancelled; an expired pending token reads as cancelled.
    status: Mapped[str] = mapped_column(String(20), default="pending")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Recorded when the merchant confirms.
    merchant_id: Mapped[str | None] = mapped_column(ForeignKey("merchants.id", ondelete="SET NULL"))
    # A reference table on Citus (partnerlink.db.distribution): PostgreSQL has no foreign
    # key to the distributed stores since migration 0025; SQLite keeps its own.
    store_id: Mapped[str | None] = mapped_column(ForeignKey("stores.id", ondelete="SET NULL"))
    green_invoices: Mapped[bool] = mapped_column(Boolean, default=False)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    exchanged_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class OAuthAuthorization(Base):
    """An OAuth authorization request (CONTRACT §13) riding on a consent's integration token.

    The merchant's sign-in and choice are the consent screen's own, recorded on the
    integration token; this row keeps what OAuth adds: where to send the merchant back,
    the client's `state` and PKCE challenge, and, once approved, the code (its digest
    only), single-use, with the connection it opened (revoked if the code comes back).
    """

    __tablename__ = "oauth_authorizations"

    id: Mapped[str] = IdColumn()
    integration_token_id: Mapped[str] = mapped_column(
        ForeignKey("integration_tokens.id", ondelete="CASCADE"), unique=True
    )
    redirect_uri: Mapped[str] = mapped_column(String(2000))
    # RFC 6749 §4.1.3: the token request repeats redirect_uri only if the request named it
    # (without it, the partner's only registered URI was used).
    redirect_uri_given: Mapped[bool] = mapped_column(Boolean, default=True)
    state: Mapped[str | None] = mapped_column(String(1024))
    code_challenge: Mapped[str] = mapped_column(String(128))
    code_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    code_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    code_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # No foreign key on PostgreSQL since migration 0025 (a reference table on Citus, and
    # connections are distributed); SQLite keeps its own.
    connection_id: Mapped[str | None] = mapped_column(
        ForeignKey("connections.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
