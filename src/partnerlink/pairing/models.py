"""Pairing codes reserved in the merchant app and redeemed by a terminal."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, IdColumn, UTCDateTime, utcnow


class PairingCode(Base):
    """A reserved code. Consumed or replaced codes are deleted (they answer 404);
    an expired one stays until its number is reserved again (it answers 410)."""

    __tablename__ = "pairing_codes"

    id: Mapped[str] = IdColumn()
    code: Mapped[int] = mapped_column(Integer, unique=True)
    # A reference table on Citus (partnerlink.db.distribution): PostgreSQL has no foreign
    # key to the distributed stores since migration 0025; SQLite keeps its own.
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"), index=True)
    partner_id: Mapped[str] = mapped_column(
        ForeignKey("partners.id", ondelete="CASCADE"), index=True
    )
    reserved_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
