"""Connections between a store and a partner, and the tokens that belong to them.

Both carry their store's `profile_id` (migration 0025): the distribution column
(partnerlink.db.distribution). On PostgreSQL their primary keys are (id, profile_id) and
a token's key to its connection is (connection_id, profile_id); the ORM knows them by
`id` alone, which stays unique.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, IdColumn, UTCDateTime, utcnow


class Connection(Base):
    __tablename__ = "connections"
    __table_args__ = (Index("ix_connections_store_partner", "store_id", "partner_id"),)

    id: Mapped[str] = IdColumn()
    store_id: Mapped[str] = mapped_column(ForeignKey("stores.id", ondelete="CASCADE"))
    # NULL never (filled on insert, and by 0025's backfill); nullable only on SQLite.
    profile_id: Mapped[str] = mapped_column(String(36))
    partner_id: Mapped[str] = mapped_column(ForeignKey("partners.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(20))  # consent | pairing
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Token(Base):
    """An access or refresh token, stored only as the SHA-256 digest of its value."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    connection_id: Mapped[str] = mapped_column(
        ForeignKey("connections.id", ondelete="CASCADE"), index=True
    )
    profile_id: Mapped[str] = mapped_column(String(36))  # the connection's
    kind: Mapped[str] = mapped_column(String(10))  # access | refresh
    # Unique with profile_id on PostgreSQL (uq_tokens_token_hash_profile, migration 0025).
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
