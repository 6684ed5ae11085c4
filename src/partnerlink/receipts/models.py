"""E-receipts: one row per order at most, written with the order (transactional outbox)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, UTCDateTime, utcnow


class Receipt(Base):
    __tablename__ = "receipts"
    # The worker claims pending receipts whose next attempt is due.
    # Partial (migration 0033): a receipt leaves the index once sent.
    __table_args__ = (
        Index(
            "ix_receipts_status_due",
            "status",
            "next_attempt_at",
            postgresql_where=text("status = 'pending'"),
            sqlite_where=text("status = 'pending'"),
        ),
        Index(
            "ix_receipts_provider_message_id",
            "provider_message_id",
            postgresql_where=text("provider_message_id IS NOT NULL"),
            sqlite_where=text("provider_message_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # Unique: never more than one SMS per order, whatever races or retries happen.
    order_pk: Mapped[int] = mapped_column(ForeignKey("orders.id", ondelete="CASCADE"), unique=True)
    # The partner's order id, copied from the order when the receipt is written, so that
    # messages, logs and `sms list` name the order without reading orders (NULL never
    # after migration 0024's backfill; nullable only because SQLite adds columns so).
    order_id: Mapped[str | None] = mapped_column(String(200))
    # On PostgreSQL the key to the order (order_pk, profile_id) implies it: 0033 dropped it there.
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"), index=True)
    # The store's, the distribution column (migration 0025): on PostgreSQL the primary key,
    # both unique keys and the keys to the order and the store include it.
    profile_id: Mapped[str] = mapped_column(String(36))
    # SHA-256 of the random 128-bit key in the link; the page looks receipts up by it.
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    to_phone: Mapped[str | None] = mapped_column(String(20))
    body: Mapped[str] = mapped_column(Text)
    link: Mapped[str] = mapped_column(String(1000))
    # pending → sent | failed (gave up) | suppressed (the phone replied STOP);
    # sent → delivered | undelivered | failed (the provider's status callback).
    # An unusable number gets no receipt at all.
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    provider: Mapped[str | None] = mapped_column(String(20))
    # Delivery-status callbacks find their receipt by it (receipts/service.py).
    provider_message_id: Mapped[str | None] = mapped_column(String(100))
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class SmsStop(Base):
    """A phone that replied STOP (or another opt-out word): it gets no more receipts
    until it replies START. Kept per number, across merchants: it is our sender it
    stopped. The number is kept only as its keyed digest (of its E.164 form,
    security/identifier_digests.py); a plain one, left by an older version, starts
    with `+` until the start-up keys it (audiences/legacy_digests.py)."""

    __tablename__ = "sms_stops"

    phone_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    stopped_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
