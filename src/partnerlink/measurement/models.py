"""Campaigns of a profile and the ad touches that reached its customers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, UTCDateTime, utcnow


class Campaign(Base):
    """An advertising campaign; `salt` keys its holdout assignment (measurement/holdout.py)."""

    __tablename__ = "campaigns"
    __table_args__ = (
        UniqueConstraint("profile_id", "campaign_id", name="uq_campaigns_profile_campaign"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    campaign_id: Mapped[str] = mapped_column(String(200))  # the merchant's own id
    name: Mapped[str] = mapped_column(String(200))
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    holdout_percent: Mapped[int] = mapped_column(Integer, default=0)
    # Random, drawn once at creation: a customer's group can be recomputed, never chosen.
    salt: Mapped[bytes] = mapped_column(LargeBinary(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Touch(Base):
    """An ad impression or click reaching a person, known only by identifier hashes.

    `email_sha256` and `phone_sha256` are lower-case hex SHA-256 of the normalized
    email and E.164 phone (orders/conversion.py: identifier_hash); plain identifiers
    given are hashed and never stored. A touch is kept whether or not a customer
    matches it yet: it applies when one appears.
    """

    __tablename__ = "touches"
    __table_args__ = (
        # Led by the key, like the customers' look-up indexes (migration 0007); the time
        # last, so an order's window is read from the index.
        Index("ix_touches_email_sha256", "email_sha256", "profile_id", "touched_at"),
        Index("ix_touches_phone_sha256", "phone_sha256", "profile_id", "touched_at"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    campaign_id: Mapped[str] = mapped_column(String(200))
    email_sha256: Mapped[str | None] = mapped_column(String(64))
    phone_sha256: Mapped[str | None] = mapped_column(String(64))
    touched_at: Mapped[datetime] = mapped_column(UTCDateTime)
    imported_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
