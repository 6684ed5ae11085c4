"""Destinations: a profile's connection to an ad platform, what was sent to it, and when.

Every table carries `profile_id`: the database will be sharded by profile.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, IdColumn, UTCDateTime, utcnow

PENDING, ACTIVE, NEEDS_ATTENTION = "pending", "active", "needs_attention"


class Destination(Base):
    """A Meta or Google audience or conversions destination of one profile.

    The scheduling columns (`next_attempt_at`, `attempts`, `lease_until`,
    `sync_requested`) are the worker's: a sync claims the row with a lease, and a
    failure the platform may recover from sets the next attempt with backoff.
    """

    __tablename__ = "destinations"
    __table_args__ = (Index("ix_destinations_due", "next_attempt_at"),)

    id: Mapped[str] = IdColumn()
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    platform: Mapped[str] = mapped_column(String(10))  # meta | google
    kind: Mapped[str] = mapped_column(String(20))  # audience | conversions
    segment: Mapped[str | None] = mapped_column(String(20))
    campaign_id: Mapped[str | None] = mapped_column(String(200))
    target: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    consent: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The credentials as security/sealing.py seals them: never in clear at rest.
    credentials_sealed: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default=PENDING)
    last_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    last_report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    members: Mapped[int] = mapped_column(BigInteger, default=0)
    sent_added: Mapped[int] = mapped_column(BigInteger, default=0)
    sent_removed: Mapped[int] = mapped_column(BigInteger, default=0)
    sent_events: Mapped[int] = mapped_column(BigInteger, default=0)
    sent_rejected: Mapped[int] = mapped_column(BigInteger, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sync_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # What the held members were last fully compared under (audience_sync.basis): while
    # it stays the same, a sync reads only the members whose fingerprint changed.
    members_basis: Mapped[str | None] = mapped_column(String(64))
    # The customers' change number up to which the held members were compared (migration
    # 0030): a sync of a segment that only the customer rows decide reads the customers
    # changed after it.
    members_seq: Mapped[int | None] = mapped_column(BigInteger)
    # The ad connection (CONTRACT §14) whose token the credentials were made from: a
    # reconnect replaces them, a deleted connection stops the destination (migration 0035).
    ad_connection_id: Mapped[str | None] = mapped_column(String(36), index=True)
    # What the platforms said they matched (CONTRACT §15), apart from `last_report` so
    # that the worker reading Google's verdicts never races a sync writing its answers:
    # {"google": {...}, "meta": {...}}, shown as lastReport.google / lastReport.meta.
    match_report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The state the merchant was last emailed about (`needs_attention` | `stale`), or
    # NULL: an alert goes out when the destination's state differs from it (migration 0036).
    alert_state: Mapped[str | None] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class DestinationMember(Base):
    """A customer the platform holds on this destination's list, by the row last sent.

    `sent` is the row exactly as it went (the identifiers' hashes, and Google's plain
    region and postal code): a member who leaves, or whose identifiers change, is
    removed by it. No foreign key to the customer: an erased customer's row must
    outlive it until its removal has reached the platform. `fingerprint` is the
    database's digest of the customer columns `sent` was made from (NULL for rows held
    before it existed): a customer whose fingerprint still matches needs no new row.
    """

    __tablename__ = "destination_members"
    # SQLite: an incremental sync by ranges reads each held member's id and fingerprint
    # from this index alone. PostgreSQL drops it (migration 0030), so that a changed
    # member's record is a heap-only update, with no index entry to write.
    __table_args__ = (
        Index("ix_destination_members_fingerprint", "destination_id", "customer_id", "fingerprint"),
    )

    destination_id: Mapped[str] = mapped_column(
        ForeignKey("destinations.id", ondelete="CASCADE"), primary_key=True
    )
    customer_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    profile_id: Mapped[str] = mapped_column(String(36))
    sent: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[int | None] = mapped_column(BigInteger)


class DestinationConversion(Base):
    """An order sent to a conversions destination: each is sent once."""

    __tablename__ = "destination_conversions"

    destination_id: Mapped[str] = mapped_column(
        ForeignKey("destinations.id", ondelete="CASCADE"), primary_key=True
    )
    order_row_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    profile_id: Mapped[str] = mapped_column(String(36))
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DestinationRun(Base):
    """One sync of a destination, as the merchant sees it in the run history (kept 90 days).

    `trigger`: schedule | request | retry; `outcome`: ok | nothing_to_do | retry |
    needs_attention; the counts are this run's alone (the destination's `sent` sums them).
    """

    __tablename__ = "destination_runs"
    __table_args__ = (
        Index("ix_destination_runs_newest", "destination_id", "id"),
        Index("ix_destination_runs_started_at", "started_at"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    destination_id: Mapped[str] = mapped_column(ForeignKey("destinations.id", ondelete="CASCADE"))
    profile_id: Mapped[str] = mapped_column(String(36))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime)
    trigger: Mapped[str] = mapped_column(String(10))
    outcome: Mapped[str] = mapped_column(String(20))
    added: Mapped[int] = mapped_column(BigInteger, default=0)
    removed: Mapped[int] = mapped_column(BigInteger, default=0)
    events: Mapped[int] = mapped_column(BigInteger, default=0)
    rejected: Mapped[int] = mapped_column(BigInteger, default=0)
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class DestinationRequestCheck(Base):
    """A Google ingest request whose verdict (`requestStatus:retrieve`) is still to read.

    Read again with backoff while Google answers PROCESSING, given up 24 h after
    `sent_at`; deleted once read. `records`: how many rows the request carried.
    """

    __tablename__ = "destination_request_checks"
    __table_args__ = (Index("ix_destination_request_checks_due", "next_check_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    destination_id: Mapped[str] = mapped_column(
        ForeignKey("destinations.id", ondelete="CASCADE"), index=True
    )
    profile_id: Mapped[str] = mapped_column(String(36))
    request_id: Mapped[str] = mapped_column(String(200))
    records: Mapped[int] = mapped_column(BigInteger, default=0)
    sent_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_check_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)


class DestinationAlert(Base):
    """The email telling the merchant that a destination entered `state`
    (`needs_attention` | `stale`): one per change of state, retried with backoff until
    the SMTP server takes it (`sent_at`), never sent twice."""

    __tablename__ = "destination_alerts"
    __table_args__ = (Index("ix_destination_alerts_due", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    destination_id: Mapped[str] = mapped_column(
        ForeignKey("destinations.id", ondelete="CASCADE"), index=True
    )
    profile_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
