"""A profile's ad-platform connections (CONTRACT.md §14) and the sign-ins under way.

Every table carries `profile_id`: the database will be sharded by profile.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, IdColumn, UTCDateTime, utcnow


class AdConnection(Base):
    """A Meta or Google account a merchant signed in with, for one profile.

    `token_sealed` is the Meta long-lived access token or the Google refresh token as
    security/sealing.py seals it (purpose `ad-connection:{id}`): never in clear at rest.
    """

    __tablename__ = "ad_connections"

    id: Mapped[str] = IdColumn()
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    merchant_id: Mapped[str] = mapped_column(String(36))
    platform: Mapped[str] = mapped_column(String(10))  # meta | google
    account_name: Mapped[str | None] = mapped_column(String(200))
    token_sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class AdConnectionState(Base):
    """A sign-in under way: the digest of its `state`, whom it was issued to, and (Google)
    the PKCE verifier, sealed. Single use (`used_at`), at most 10 minutes old."""

    __tablename__ = "ad_connection_states"

    id: Mapped[str] = IdColumn()
    state_digest: Mapped[str] = mapped_column(String(64), unique=True)
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    merchant_id: Mapped[str] = mapped_column(String(36))
    # The digest of the merchant session token it was issued to.
    session_digest: Mapped[str] = mapped_column(String(64))
    via: Mapped[str] = mapped_column(String(10))  # console | api
    platform: Mapped[str] = mapped_column(String(10))
    # The connection a reconnect replaces the token of (None: a new connection).
    connection_id: Mapped[str | None] = mapped_column(String(36))
    segment: Mapped[str | None] = mapped_column(String(20))
    verifier_sealed: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
