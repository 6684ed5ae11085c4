"""Webhook events: written with their cause, delivered by the worker (tasks.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, UTCDateTime, utcnow


class WebhookEvent(Base):
    """One event for one partner, and the log of its delivery.

    `queue` orders deliveries: a connection's id (or the partner's, for an event of
    no connection). An event is sent only once every earlier event of its queue is
    delivered or given up (`seq` is the order).
    """

    __tablename__ = "webhook_events"
    __table_args__ = (
        Index("ix_webhook_events_due", "status", "next_attempt_at"),
        Index("ix_webhook_events_queue", "queue", "status", "seq"),
        # One partner's deliveries, newest first (GET /v1/webhooks/deliveries).
        Index("ix_webhook_events_partner", "partner_id", "seq"),
    )

    seq: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(String(40), unique=True)  # evt_...
    partner_id: Mapped[str] = mapped_column(ForeignKey("partners.id", ondelete="CASCADE"))
    queue: Mapped[str] = mapped_column(String(64))
    event_type: Mapped[str] = mapped_column(String(60))
    # The exact bytes sent (and signed): {"id", "type", "createdAt", "data"}.
    body: Mapped[str] = mapped_column(Text)
    # Where its last attempt went (each attempt reads the partner's URL anew); at first,
    # the URL registered when it was written.
    url: Mapped[str] = mapped_column(String(2000))
    # pending → delivered | failed (given up 72 h after the event)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
