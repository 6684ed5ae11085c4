"""The first answer to each idempotency key, per caller."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.db.base import Base, BigIntPK, UTCDateTime, utcnow


class IdempotencyKey(Base):
    """A request's key and its answer, written in the request's own transaction.

    The unique (scope, key) is what makes two requests racing with one key apply once:
    the second's claim waits for the first's commit, then fails and replays its answer.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        UniqueConstraint("scope", "key", name="uq_idempotency_keys_scope_key"),
        Index("ix_idempotency_keys_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # Whose key: "connection:<id>" (a partner's store), "profile:<merchant>:<profile>".
    scope: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(255))
    # SHA-256 of the method, path and canonical JSON body: "the same request".
    request_digest: Mapped[str] = mapped_column(String(64))
    # The answer; NULL only inside the claiming transaction, never once committed.
    status: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
