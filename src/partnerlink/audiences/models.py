"""Customers' choices: opt-outs, and the suppression list of erased identifiers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from partnerlink.customers.models import Customer
from partnerlink.db.base import Base, UTCDateTime, utcnow


class OptOut(Base):
    """A customer who is never exported again (merchant's request or an SMS STOP)."""

    __tablename__ = "audience_opt_outs"

    customer_id: Mapped[int] = mapped_column(
        ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
    )
    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Suppression(Base):
    """An erased person's email or phone, kept only as SHA-256 hex of its normalized form.

    Email: trimmed and lower-cased; phone: E.164 with its `+` (CONTRACT §6, §7): the
    forms customers are stored in, so a customer who comes back is recognised.
    """

    __tablename__ = "audience_suppressions"

    profile_id: Mapped[str] = mapped_column(
        ForeignKey("profiles.id", ondelete="CASCADE"), primary_key=True
    )
    identifier_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# Exports walk a profile's customers in id order, a chunk at a time (keyset pages):
# this index finds each chunk without reading other profiles' customers.
CUSTOMERS_BY_PROFILE = Index("ix_customers_profile_id_id", Customer.profile_id, Customer.id)
