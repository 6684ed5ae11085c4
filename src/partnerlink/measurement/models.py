"""Campaigns of a profile (its touches are orders' table: orders/models.py's Touch)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, UniqueConstraint
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
    # How long after a click, and after a view, an order still counts as the campaign's
    # (CONTRACT.md §16); its touches carry the end of their window (orders' Touch.counts_until).
    click_window_days: Mapped[int] = mapped_column(Integer)
    view_window_days: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # Random, drawn once at creation: a customer's group can be recomputed, never chosen.
    salt: Mapped[bytes] = mapped_column(LargeBinary(32))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
