"""Customers of a profile, and customer-list uploads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, IdColumn, UTCDateTime, utcnow


class Customer(Base):
    """One person in a profile's customer base, de-duplicated by email, then phone."""

    __tablename__ = "customers"
    __table_args__ = (
        # Look-up indexes lead with the key looked up, so each look-up has one index that
        # fits even before the planner has statistics (migration 0007). NULL emails never
        # collide, in SQLite and PostgreSQL alike. (SQLite databases keep this constraint
        # as (profile_id, email) from 0001: the same uniqueness.)
        UniqueConstraint("email", "profile_id", name="uq_customers_email_profile"),
        Index("ix_customers_phone_profile", "phone_number", "profile_id"),
        # At most one phone-only customer per phone (the rule never makes two), so
        # that concurrent creations of the same phone-only customer collide.
        Index(
            "uq_customers_phone_no_email",
            "phone_number",
            "profile_id",
            unique=True,
            sqlite_where=text("email IS NULL"),
            postgresql_where=text("email IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    email: Mapped[str | None] = mapped_column(String(320))
    phone_number: Mapped[str | None] = mapped_column(String(20))  # E.164
    first_name: Mapped[str | None] = mapped_column(String(200))
    last_name: Mapped[str | None] = mapped_column(String(200))
    city: Mapped[str | None] = mapped_column(String(200))
    country_code: Mapped[str | None] = mapped_column(String(2))
    # A match key for Google's audiences (CONTRACT §8); trimmed, at most 16 characters.
    postal_code: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Upload(Base):
    """A customer file: received (stored durably) → processing → done | failed."""

    __tablename__ = "uploads"
    # The worker looks for claimable uploads by status and lease.
    __table_args__ = (Index("ix_uploads_status_lease", "status", "lease_until"),)

    id: Mapped[str] = IdColumn()
    # The single-use nonce signed into the upload URL; unique, so a second PUT is refused.
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"), index=True)
    profile_id: Mapped[str] = mapped_column(ForeignKey("profiles.id", ondelete="CASCADE"))
    # The connection that asked for the upload URL: its partner hears when it finishes.
    connection_id: Mapped[str | None] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(20), default="received", index=True)
    storage_key: Mapped[str] = mapped_column(String(500))
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    records: Mapped[int] = mapped_column(Integer, default=0)
    created: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    rejected: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    failure_reason: Mapped[str | None] = mapped_column(String(500))
    # Records whose effects are committed; a restarted ingestion resumes after them.
    records_committed: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class CustomerDeletion(Base):
    """A deleted customer (an erasure), left by a database trigger (migration 0030) with
    the change number of its deletion, so that an audience sync finds its held rows
    among the changes rather than by scanning them all. No foreign key: a profile's
    deletion cascades to its customers, whose rows land here while the profile goes."""

    __tablename__ = "customer_deletions"

    profile_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    change_seq: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    customer_id: Mapped[int] = mapped_column(BigInteger)
