"""Stores: the unit a partner connects to."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, false
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, IdColumn, UTCDateTime, utcnow


class Store(Base):
    __tablename__ = "stores"

    id: Mapped[str] = IdColumn()
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(300))
    address: Mapped[str] = mapped_column(String(500), default="")
    city: Mapped[str | None] = mapped_column(String(200))
    state: Mapped[str | None] = mapped_column(String(200))
    postal_code: Mapped[str | None] = mapped_column(String(50))
    phone_number: Mapped[str | None] = mapped_column(String(50))
    # Unset (None) on a store created by consent under a profile with no other
    # store, until the partner's PUT /v1/stores (or an order's `store`) sets them.
    country_code: Mapped[str | None] = mapped_column(String(2))
    currency: Mapped[str | None] = mapped_column(String(3))
    pos_type: Mapped[str | None] = mapped_column(String(100))
    green_invoices: Mapped[bool] = mapped_column(Boolean, default=False)
    # A store the merchant added by hand (not created by a partner's consent).
    manual: Mapped[bool] = mapped_column(Boolean, default=False)
    # A sandbox partner's store, made as one (sandbox/, or its consent with a profile) and
    # never flipped either way: its texts never reach a provider, its data stays out of
    # results and audiences.
    is_test: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
